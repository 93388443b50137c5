import { test, expect } from 'phonelease/playwright';

/**
 * The account's profile phone keeps its files between sessions: what the first test writes,
 * the second reads on a new session of the same phone. Serial, because one profile phone
 * can be held by only one session at a time.
 */
test.describe.serial('profile phone', () => {
  test.use({ phoneOptions: { profile: true } });
  const note = `/sdcard/Download/phonelease-note.txt`;

  test('writes a note', async ({ phone, phoneleaseRunId }) => {
    await phone.push(Buffer.from(`written in run ${phoneleaseRunId}\n`), note);
    const { stdout } = await phone.shell(`cat ${note}`);
    expect(stdout).toContain(phoneleaseRunId);
  });

  test('finds the note on its next session', async ({ phone, phoneleaseRunId }) => {
    const saved = await phone.pull(note);
    expect(saved.toString()).toBe(`written in run ${phoneleaseRunId}\n`);
  });
});
