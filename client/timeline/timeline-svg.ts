import { compareNodeNames, TIMELINE_COLOURS, TIMELINE_PHASES, timelineSpanMs, type Timeline, type TimelineBar } from './timeline-model.js';

/**
 * A timeline as a standalone SVG: one row per lane, time across in seconds from the first bar's
 * start, one rectangle per bar in its phase's colour with a tooltip, a legend of the phases drawn.
 * Pure and deterministic: the same timeline gives the same bytes (no clock, no locale).
 */

const WIDTH = 1200;
const RIGHT = 24;
const TOP = 78;
/** Up to this many lanes, every row is full height and named. */
const FULL_ROWS = 200;
const FULL_ROW = 18;
/** Beyond FULL_ROWS, the plot aims at this height, rows no thinner than MIN_ROW. */
const TALL_PLOT = 3600;
const MIN_ROW = 2;
/** Tick steps in seconds: the first that gives at most MAX_TICKS intervals. */
const STEPS = [0.1, 0.2, 0.5, 1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 14400, 21600, 43200, 86400];
const MAX_TICKS = 10;

/** Text for XML: the five special characters escaped, and what XML 1.0 cannot hold at all (control characters, lone surrogates) replaced. */
export function escapeXml(text: string): string {
  return text
    .replace(
      /[\u0000-\u0008\u000b\u000c\u000e-\u001f\ufffe\uffff]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g,
      '\ufffd',
    )
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&apos;');
}

/** A coordinate: at most two decimals, no trailing zeros (short and the same everywhere). */
const n = (x: number) => String(Math.round(x * 100) / 100);
const seconds = (ms: number) => (Math.abs(ms) < 10_000 ? (ms / 1000).toFixed(2) : (ms / 1000).toFixed(1));

function tickStep(totalSeconds: number): number {
  for (const step of STEPS) if (totalSeconds / step <= MAX_TICKS) return step;
  return Math.ceil(totalSeconds / MAX_TICKS / 86400) * 86400;
}

/** The legend's items, wrapped: their widths decide how many lines it takes (`line`: the last one's index). */
function legendOf(bars: TimelineBar[], left: number): { legend: { phase: string; x: number; line: number }[]; line: number } {
  const legend: { phase: string; x: number; line: number }[] = [];
  let lx = left;
  let line = 0;
  for (const phase of TIMELINE_PHASES.filter((p) => bars.some((b) => b.phase === p))) {
    const w = 18 + phase.length * 7 + 18;
    if (lx + w > WIDTH - RIGHT && lx > left) {
      line++;
      lx = left;
    }
    legend.push({ phase, x: lx, line });
    lx += w;
  }
  return { legend, line };
}

/** The time axis: ticks above the plot, grid lines through it. `x`: ms from the first step to a position. */
function timeAxis(spanMs: number, x: (ms: number) => number, left: number, plotW: number, plotH: number): string[] {
  const out: string[] = [];
  const step = tickStep(spanMs / 1000);
  const ticks: number[] = [];
  for (let i = 0; i * step <= spanMs / 1000 + 1e-9; i++) ticks.push(i * step);
  out.push(`<path d="${ticks.map((s) => `M${n(x(s * 1000))} ${TOP - 4}V${TOP + plotH}`).join('')}" stroke="#d0d0d0" stroke-width="1"/>`);
  for (const s of ticks)
    out.push(
      `<text x="${n(x(s * 1000))}" y="${TOP - 8}" font-size="10" text-anchor="middle" fill="#444444">${step < 1 ? s.toFixed(1) : String(Math.round(s))}</text>`,
    );
  out.push(`<text x="${left + plotW}" y="${TOP - 22}" font-size="10" text-anchor="end" fill="#444444">seconds from the first step</text>`);
  out.push(`<path d="M${left} ${TOP + plotH}H${left + plotW}" stroke="#888888" stroke-width="1"/>`);
  return out;
}

export function renderTimelineSvg(t: Timeline): string {
  // Bars with times that are no numbers cannot be placed; one that ends before it starts is a point.
  const bars: TimelineBar[] = t.bars
    .filter((b) => Number.isFinite(b.startMs) && Number.isFinite(b.endMs))
    .map((b) => (b.endMs < b.startMs ? { ...b, endMs: b.startMs } : b));
  // Every bar has a row: lanes the list leaves out come after it, in natural order.
  const listed = new Set(t.lanes);
  const extra = [...new Set(bars.map((b) => b.lane).filter((lane) => !listed.has(lane)))].sort(compareNodeNames);
  const lanes = [...new Set(t.lanes), ...extra];
  const row = new Map(lanes.map((lane, i) => [lane, i]));

  const { startMs: t0, endMs: t1 } = timelineSpanMs(bars);
  const totalMs = t1 - t0;
  const spanMs = totalMs > 0 ? totalMs : 1000;

  const rowH = lanes.length <= FULL_ROWS ? FULL_ROW : Math.max(MIN_ROW, Math.min(FULL_ROW, Math.floor(TALL_PLOT / lanes.length)));
  const barH = rowH >= 8 ? rowH - 4 : rowH;
  const fontSize = rowH >= 14 ? 11 : 10;
  /** Every k-th lane is named when rows are thinner than a line of text. */
  const every = rowH >= 12 ? 1 : Math.ceil(12 / rowH);
  const longest = Math.min(28, Math.max(7, ...lanes.map((l) => l.length)));
  const left = Math.round(longest * fontSize * 0.62 + 14);
  const plotW = WIDTH - left - RIGHT;
  const plotH = Math.max(1, lanes.length) * rowH;
  const x = (ms: number) => left + ((ms - t0) / spanMs) * plotW;

  const out: string[] = [];
  const { legend, line } = legendOf(bars, left);
  const legendTop = TOP + plotH + 30;
  const height = legendTop + (legend.length ? (line + 1) * 20 : 0) + 10;

  out.push(
    `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${height}" viewBox="0 0 ${WIDTH} ${height}" font-family="sans-serif">`,
  );
  out.push(`<path d="M0 0H${WIDTH}V${height}H0Z" fill="#ffffff"/>`);
  out.push(`<text x="${left}" y="24" font-size="16" font-weight="bold">${escapeXml(t.title)}</text>`);
  out.push(
    `<text x="${left}" y="44" font-size="12" fill="#444444">total ${seconds(totalMs)} s · ${lanes.length} lane${lanes.length === 1 ? '' : 's'} · ${bars.length} bar${bars.length === 1 ? '' : 's'}</text>`,
  );

  // Every other row shaded, as one path: a thousand lanes stay one element.
  if (rowH >= 6 && lanes.length > 1) {
    const stripes = lanes
      .map((_, i) => i)
      .filter((i) => i % 2 === 1)
      .map((i) => `M${left} ${n(TOP + i * rowH)}h${n(plotW)}v${rowH}h${n(-plotW)}Z`);
    out.push(`<path d="${stripes.join('')}" fill="#f3f3f3"/>`);
  }

  out.push(...timeAxis(spanMs, (ms) => x(t0 + ms), left, plotW, plotH));

  lanes.forEach((lane, i) => {
    if (i % every !== 0) return;
    out.push(
      `<text x="${left - 6}" y="${n(TOP + i * rowH + rowH / 2 + fontSize * 0.35)}" font-size="${fontSize}" text-anchor="end">${escapeXml(lane)}</text>`,
    );
  });

  for (const b of bars) {
    const y = TOP + (row.get(b.lane) ?? 0) * rowH + (rowH - barH) / 2;
    const x0 = x(b.startMs);
    const w = Math.max(1, x(b.endMs) - x0);
    const tip = `${b.lane} · ${b.phase} · ${seconds(b.endMs - b.startMs)} s from ${seconds(b.startMs - t0)} s${b.label ? ` · ${b.label}` : ''}`;
    out.push(
      `<rect x="${n(x0)}" y="${n(y)}" width="${n(w)}" height="${barH}" fill="${TIMELINE_COLOURS[b.phase] ?? TIMELINE_COLOURS.other}"><title>${escapeXml(tip)}</title></rect>`,
    );
  }

  for (const item of legend) {
    const y = legendTop + item.line * 20;
    out.push(
      `<rect x="${item.x}" y="${y - 10}" width="12" height="12" fill="${TIMELINE_COLOURS[item.phase as keyof typeof TIMELINE_COLOURS]}"/>`,
    );
    out.push(`<text x="${item.x + 18}" y="${y}" font-size="12">${escapeXml(item.phase)}</text>`);
  }
  if (bars.length === 0) out.push(`<text x="${left}" y="${TOP + rowH}" font-size="12" fill="#444444">no steps recorded</text>`);
  out.push('</svg>');
  return `${out.join('\n')}\n`;
}
