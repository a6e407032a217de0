import type { MaintenanceWindow, Weekday } from '../../rules/index.js';
import type { CommandLogEntry } from '../../sim/hosts/host-state.js';

/**
 * Windows on a clock the test controls: a window from one instant to another (whole seconds), in a
 * time zone, written as the cluster configuration spells it. The instants are what the workflow
 * must compute back from the day, the times of day and the zone.
 */
export function windowBetween(
  from: number,
  to: number,
  timeZone: string,
): { window: MaintenanceWindow; opensAt: number; closesAt: number } {
  const opensAt = Math.ceil(from / 1000) * 1000;
  const closesAt = Math.ceil(to / 1000) * 1000;
  if (closesAt - opensAt >= 86_400_000 || closesAt <= opensAt) throw new Error('a test window lasts less than a day');
  const format = new Intl.DateTimeFormat('en-GB', {
    timeZone,
    weekday: 'short',
    hour: '2-digit',
    minute: '2-digit',
    second: '2-digit',
    hourCycle: 'h23',
  });
  const local = (t: number) => Object.fromEntries(format.formatToParts(new Date(t)).map((p) => [p.type, p.value]));
  const a = local(opensAt);
  const b = local(closesAt);
  return {
    window: {
      days: [a.weekday as Weekday],
      start: `${a.hour}:${a.minute}:${a.second}`,
      end: `${b.hour}:${b.minute}:${b.second}`,
      timeZone,
    },
    opensAt,
    closesAt,
  };
}

/** The `maintenanceWindows:` block appended to a cluster configuration. */
export function windowsYaml(windows: MaintenanceWindow[]): string {
  return `maintenanceWindows:\n${windows.map((w) => `  - {days: [${w.days.join(', ')}], start: "${w.start}", end: "${w.end}", timeZone: ${w.timeZone}}\n`).join('')}`;
}

/** A host's command log as instants: when each command started (ms). */
export const startedAt = (e: CommandLogEntry) => Date.parse(e.time);
