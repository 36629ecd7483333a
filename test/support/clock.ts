/** Waits out the end of a clock minute, so that requests made next share one rate-limit window. */
export async function awayFromMinuteEnd(seconds = 20): Promise<void> {
  const intoMinute = (Date.now() % 60_000) / 1000;
  if (intoMinute > 60 - seconds) await new Promise((r) => setTimeout(r, (60 - intoMinute + 0.2) * 1000));
}
