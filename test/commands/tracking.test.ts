import t from 'tap';
import { TRACKED_URL_MAX, trackHtml } from '../../commands/emails/tracking.ts';

const tracking = {
  pixel: 'https://links.test/t/o/P.M',
  click: (url: string) => `https://links.test/t/c/${encodeURIComponent(url)}`,
  keep: (url: string) => url.startsWith('https://localhost/unsubscribe/'),
};
const PIXEL =
  '<img src="https://links.test/t/o/P.M" width="1" height="1" alt="" style="display:block;width:1px;height:1px;border:0">';

t.test('http(s) links of a and area go through the click redirect; the rest stays byte for byte', async (t) => {
  const html =
    '<!doctype html><html><head><!--[if mso]><style>x{}</style><![endif]--></head><body>\n' +
    '<p>Hi <A HREF=https://shop.test/a?x=1&amp;y=2 class=b>shop</A>, ' +
    `<a href='mailto:x@y.test'>mail</a> <a href="#top">top</a> <a href="/rel">rel</a> ` +
    '<a href=" http://old.test/ ">old</a> <a name=x>anchor</a> <a href="tel:+1">tel</a> ' +
    '<a href="https://localhost/unsubscribe/abc.def">unsubscribe</a> <a href="https://bad host/">bad</a></p>' +
    '<map><area shape=rect href="https://map.test/"></map><!-- <a href="https://comment.test/">c</a> -->\n</body></html>';
  const out = trackHtml(html, tracking);
  t.equal(
    out,
    '<!doctype html><html><head><!--[if mso]><style>x{}</style><![endif]--></head><body>\n' +
      `<p>Hi <A href="https://links.test/t/c/${encodeURIComponent('https://shop.test/a?x=1&y=2')}" class=b>shop</A>, ` +
      `<a href='mailto:x@y.test'>mail</a> <a href="#top">top</a> <a href="/rel">rel</a> ` +
      `<a href="https://links.test/t/c/${encodeURIComponent('http://old.test/')}">old</a> <a name=x>anchor</a> <a href="tel:+1">tel</a> ` +
      '<a href="https://localhost/unsubscribe/abc.def">unsubscribe</a> <a href="https://bad host/">bad</a></p>' +
      `<map><area shape=rect href="https://links.test/t/c/${encodeURIComponent('https://map.test/')}"></map><!-- <a href="https://comment.test/">c</a> -->\n${PIXEL}</body></html>`,
  );
});

t.test('the pixel goes at the end without a body; an attribute-breaking target is escaped', async (t) => {
  const quoted = trackHtml('<a href="https://s.test/?q=&quot;x&quot;">q</a>', {
    ...tracking,
    click: (url) => `https://links.test/t/c/${url}`,
  });
  t.equal(quoted, `<a href="https://links.test/t/c/https://s.test/?q=&quot;x&quot;">q</a>${PIXEL}`);
  t.equal(trackHtml('<p>No links.</p>', tracking), `<p>No links.</p>${PIXEL}`);
});

t.test('a link longer than a token carries is left as it is', async (t) => {
  const long = `https://s.test/${'a'.repeat(TRACKED_URL_MAX)}`;
  t.equal(trackHtml(`<a href="${long}">x</a>`, tracking), `<a href="${long}">x</a>${PIXEL}`);
  const edge = `https://s.test/${'a'.repeat(TRACKED_URL_MAX - 'https://s.test/'.length)}`;
  t.match(trackHtml(`<a href="${edge}">x</a>`, tracking), 'https://links.test/t/c/');
});
