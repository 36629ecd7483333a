import { Cron } from 'croner';
import type { ScheduleTrigger, Trigger } from './events.ts';

export const EVERY_DAY = [0, 1, 2, 3, 4, 5, 6];

/**
 * The schedule as a five-field cron pattern read in its zone: `hourly` at `minute` past every
 * `everyHours`-th hour from local midnight (the count starts again each day), `daily` at
 * hour:minute, both on `weekdays`; `monthly` at hour:minute on `monthDay` (1 to 28, so every month has it).
 */
export function cronPattern(t: ScheduleTrigger): string {
  const days = t.weekdays.length === 7 ? '*' : t.weekdays.join(',');
  switch (t.cadence) {
    case 'hourly':
      return `${t.minute} ${t.everyHours === 1 ? '*' : `*/${t.everyHours}`} * * ${days}`;
    case 'daily':
      return `${t.minute} ${t.hour} * * ${days}`;
    case 'monthly':
      return `${t.minute} ${t.hour} ${t.monthDay} * *`;
  }
}

/**
 * The first instant of the schedule strictly after `after`, computed by croner in the trigger's
 * IANA zone: a local time that a change to summer time skips runs at the first minute that
 * exists after it, and one that the change back repeats runs once.
 */
export function nextRunAfter(t: ScheduleTrigger, after: Date): Date | null {
  return new Cron(cronPattern(t), { timezone: t.timezone }).nextRun(after);
}

/** When an active task runs next by its schedule: null for mail and manual triggers. */
export function nextScheduledRun(trigger: Trigger, after: Date): string | null {
  return trigger.kind === 'schedule' ? (nextRunAfter(trigger, after)?.toISOString() ?? null) : null;
}
