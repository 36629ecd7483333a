/** One message of an import file: where it starts, where the next begins, its bytes (null: past the size limit). */
export interface SplitMessage {
  start: number;
  next: number;
  raw: Buffer | null;
  /** Its mbox `From ` line, line end dropped (a restore reads the time in it); null for an .eml or a line too long to be one. */
  fromLine: string | null;
}

/** A `From ` line longer than this is no envelope line a writer of ours made: not kept. */
const FROM_LINE_MAX = 200;

const FROM = Buffer.from('From ');
const isBlank = (line: Buffer) => line.length === 1 || (line.length === 2 && line[0] === 0x0d);

/** `>From `, `>>From `…: the quoting of mboxrd (and mboxo's one level), less one `>`. */
function unquote(line: Buffer): Buffer {
  if (line[0] !== 0x3e) return line;
  let i = 0;
  while (line[i] === 0x3e) i++;
  return line.subarray(i, i + 5).equals(FROM) ? line.subarray(1) : line;
}

/**
 * Splits an mbox read from byte `offset` (a message's `From ` line, or the file's start) into its
 * messages, one at a time: memory holds one message, never the file. A message starts at a
 * `From ` line that opens the stream or follows a blank line (a body's own `From ` is quoted by
 * the writer, and a bare one mid-paragraph is left in the body); its blank separator line is
 * dropped and `>From ` quoting undone (mboxrd; mboxo's single level alike). A message past
 * `maxBytes` is answered without its bytes, so the caller counts it and goes on.
 */
export async function* splitMbox(
  source: AsyncIterable<Buffer>,
  offset: number,
  maxBytes: number,
): AsyncGenerator<SplitMessage> {
  let pos = offset;
  let carry: Buffer | null = null;
  let prevBlank = true;
  let current: {
    start: number;
    fromLine: string | null;
    lines: Buffer[];
    size: number;
    tooLarge: boolean;
  } | null = null;

  const finish = (next: number): SplitMessage | null => {
    if (!current) return null;
    const lines = current.lines;
    if (lines.length > 0 && isBlank(lines[lines.length - 1]!)) lines.pop();
    const done = {
      start: current.start,
      next,
      raw: current.tooLarge ? null : Buffer.concat(lines),
      fromLine: current.fromLine,
    };
    current = null;
    return done;
  };

  function* line(data: Buffer): Generator<SplitMessage> {
    const at = pos;
    pos += data.length;
    if (prevBlank && data.subarray(0, 5).equals(FROM)) {
      const done = finish(at);
      if (done) yield done;
      const fromLine = data.length <= FROM_LINE_MAX ? data.toString('latin1').replace(/\r?\n$/, '') : null;
      current = { start: at, fromLine, lines: [], size: 0, tooLarge: false };
      prevBlank = false;
      return;
    }
    prevBlank = isBlank(data);
    if (!current || current.tooLarge) return;
    const kept = unquote(data);
    current.size += kept.length;
    if (current.size > maxBytes) {
      current.tooLarge = true;
      current.lines = [];
    } else current.lines.push(Buffer.from(kept));
  }

  for await (const chunk of source) {
    let data: Buffer = carry ? Buffer.concat([carry, chunk]) : chunk;
    carry = null;
    let from = 0;
    for (let nl = data.indexOf(0x0a, from); nl !== -1; nl = data.indexOf(0x0a, from)) {
      yield* line(data.subarray(from, nl + 1));
      from = nl + 1;
    }
    data = data.subarray(from);
    // A line longer than a message may be is cut: it can only belong to one too large.
    if (data.length > maxBytes) {
      yield* line(data);
      data = Buffer.alloc(0);
    }
    carry = data.length > 0 ? Buffer.from(data) : null;
  }
  if (carry) yield* line(carry);
  const last = finish(pos);
  if (last) yield last;
}

/** A whole file as one message (.eml). */
export async function* wholeMessage(source: AsyncIterable<Buffer>, maxBytes: number): AsyncGenerator<SplitMessage> {
  const parts: Buffer[] = [];
  let read = 0;
  for await (const chunk of source) {
    read += chunk.length;
    if (read <= maxBytes) parts.push(chunk);
  }
  yield { start: 0, next: read, raw: read > maxBytes ? null : Buffer.concat(parts), fromLine: null };
}

/** The messages of `messages` that start at or after byte `at` (a resumed member is read again from its start). */
export async function* startingAt(messages: AsyncIterable<SplitMessage>, at: number): AsyncGenerator<SplitMessage> {
  for await (const message of messages) if (message.start >= at) yield message;
}

/** The messages of `messages` with their places in the import, on from the `after`th. */
export async function* numbered(
  messages: AsyncIterable<SplitMessage>,
  after: number,
): AsyncGenerator<{ message: SplitMessage; ordinal: number }> {
  let ordinal = after;
  for await (const message of messages) yield { message, ordinal: ++ordinal };
}
