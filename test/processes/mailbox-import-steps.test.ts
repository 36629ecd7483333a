import t from 'tap';
import { archiveStepLength } from '../../processes/mailbox-imports/worker.ts';

t.test('an archive step runs its minute, or long enough that getting back costs a tenth of it', async (t) => {
  t.equal(archiveStepLength(60_000, 0, 10, 300_000), 60_000, 'from the start: nothing to re-read');
  t.equal(archiveStepLength(60_000, 2_000, 10, 300_000), 60_000, 'a short way back');
  t.equal(archiveStepLength(60_000, 20_000, 10, 300_000), 200_000, 'deep in a 2 GB tgz: 20 s back, a 200 s step');
  t.equal(archiveStepLength(60_000, 90_000, 10, 300_000), 300_000, 'deep in tens of GB: at most five minutes');
  t.equal(archiveStepLength(0, 20_000, 0, 300_000), 0, 'both off: a step a batch (the restart tests)');
});
