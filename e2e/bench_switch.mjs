// Benchmark (not a test) of switching views with a million kernels, in Debian's headless
// Chromium: a synthetic trace of 6,330 training steps (1,000,140 kernels, `jarvis synth`) is
// loaded, then every tab is opened in turn, three rounds. Per tab: the time from the click to
// the view painted (its element present, then the frame after its paint; for the timeline, its
// lanes drawn: the first time a round trip to the worker, later the frame it kept), median and worst.
// Usage (after `trunk build --release` and `cargo build --release -p jarvis-cli`):
//   node e2e/bench_switch.mjs [TRACE]
import path from 'node:path';
import { startApp, stopApp, openApp, millionKernelTrace } from './harness.mjs';

const ROUNDS = 3;
// Tab → the element that shows it is there.
const TABS = [['overview', 'gpu-timeline'], ['steps', 'steps-table'], ['categories', 'categories'], ['ops', 'ops-table'],
  ['kernels', 'kernels-table'], ['roofline', 'roofline'], ['timeline', 'timeline'], ['report', 'report'],
  ['rough', 'report-rough'], ['diagnostics', 'diagnostics-view']];

const trace = process.argv[2] || millionKernelTrace('json.gz');

await startApp();
const { page, errors } = await openApp({ width: 1600, height: 1000 });
await page.getByTestId('trace-input').setInputFiles(trace);
await page.locator('body[data-complete-ms]').waitFor({ timeout: 900000 });
const kernels = await page.evaluate(() => document.querySelector('[data-testid=analysis-cost]')?.closest('section')?.textContent.match(/([\d,]+) kernels/)?.[1]);
console.log(`${path.basename(trace)}: ${kernels ?? '?'} kernels; every view ready ${(Number(await page.evaluate(() => document.body.dataset.completeMs)) / 1000).toFixed(1)} s after the hand-over`);

const times = new Map(TABS.map(([t]) => [t, []]));
const detail = [];
// Click → the view's element present (and for the timeline, drawn) within the click's microtasks.
const builtAt = new Map(TABS.map(([t]) => [t, []]));
for (let round = 0; round < ROUNDS; round += 1) {
  for (const [tab, id] of TABS) {
    const ms = await page.evaluate(async ({ tab, id }) => {
      const raf = () => new Promise((r) => requestAnimationFrame(r));
      // Lanes drawn: slices painted on the canvas (from the worker's frame, or the kept one).
      const drawn = () => Number(document.querySelector('[data-testid=timeline]')?.dataset.items ?? 0);
      const t0 = performance.now();
      document.querySelector(`[data-testid=tab-${tab}]`).click();
      // Shown: the view's element exists (for the timeline: a frame of lanes was drawn on it).
      const shown = () => document.querySelector(`[data-testid=${id}]`) && (tab !== 'timeline' || drawn() > 0);
      // Microtasks first (the view is built in them), then frames.
      for (let i = 0; i < 200 && !shown(); i += 1) await Promise.resolve();
      const built = performance.now() - t0;
      while (!shown()) {
        await raf();
        if (performance.now() - t0 > 60000) return [NaN, NaN];
      }
      // Painted: the frame after the one that rendered it has started.
      await raf();
      await raf();
      return [performance.now() - t0, built];
    }, { tab, id });
    times.get(tab).push(ms[0]);
    builtAt.get(tab).push(ms[1]);
    if (tab === 'timeline') {
      // The timeline's first frame: the worker's round trip and the paint (src/views/timeline/state.rs).
      detail.push(await page.evaluate(() => {
        const c = document.querySelector('[data-testid=timeline]');
        return [Number(c.dataset.lastRoundtripMs), Number(c.dataset.lastPaintMs)];
      }));
    }
  }
}
console.log('');
console.log('| view | click → painted, median ms | worst ms | of it built (microtasks), median ms |');
console.log('|---|---|---|---|');
const med = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
for (const [tab, xs] of times) {
  console.log(`| ${tab} | ${med(xs).toFixed(0)} | ${Math.max(...xs).toFixed(0)} | ${med(builtAt.get(tab)).toFixed(0)} |`);
}
console.log(`timeline's first frame: worker round trip / paint ms ${detail.map(([r, p]) => `${r.toFixed(0)} / ${p.toFixed(0)}`).join(', ')}`);
if (errors.length) console.log('page errors:', errors);
await stopApp();
