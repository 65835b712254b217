// End-to-end test of the critical path and the What-if panel on a real trace (Qwen1.5-0.5B on
// H100): the overview's card, each step's path against the CLI's
// critical_path/jarvis_summary.csv, the path's own lane on the timeline, and a what-if
// replayed by the worker against `jarvis whatif` on the same change.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { OUT, JARVIS, QWEN, startApp, stopApp, openApp, assertLocalOnly, parseCsv } from './harness.mjs';

before(startApp);
after(stopApp);

/** The CLI's Jarvis path length per step (ms), from jarvis_summary.csv. */
function cliPathMs(trace) {
  const dir = fs.mkdtempSync(path.join(OUT, 'path-'));
  execFileSync(JARVIS, ['report', trace, '--out', dir, '--platform', 'none'], { stdio: 'ignore' });
  const rows = parseCsv(fs.readFileSync(path.join(dir, 'critical_path', 'jarvis_summary.csv'), 'utf8'));
  fs.rmSync(dir, { recursive: true, force: true });
  const ms = new Map();
  for (const r of rows) ms.set(r.step, (ms.get(r.step) ?? 0) + Number(r.duration_us) / 1000);
  return ms;
}

/** `jarvis whatif`'s predicted ms per step for one change. */
function cliWhatIf(trace, flag, spec) {
  const out = execFileSync(JARVIS, ['whatif', trace, flag, spec], { encoding: 'utf8' });
  const steps = new Map();
  for (const line of out.split('\n')) {
    const m = line.match(/^(\S+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+[+-][\d.]+%$/);
    if (m) steps.set(m[1], { replayed: Number(m[3]), predicted: Number(m[4]) });
  }
  return steps;
}

test('the critical path: the overview card, each step against the CLI, its timeline lane, and a what-if against `jarvis whatif`', { skip: !fs.existsSync(QWEN) && !process.env.CI }, async () => {
  const cli = cliPathMs(QWEN);
  assert.ok(cli.size > 0, 'the CLI writes a path');
  const { page, errors, requests } = await openApp({ width: 1280, height: 900 });
  await page.getByTestId('trace-input').setInputFiles(QWEN);
  await page.locator('body[data-complete-ms]').waitFor({ timeout: 120000 });
  // The overview names the typical step's path and its causes.
  const card = page.getByTestId('path-card');
  await card.waitFor();
  assert.ok(cli.has(await card.getAttribute('data-step')), 'the card names a step of the CLI');
  assert.match(await card.textContent(), /ms\. .*%/);

  await page.getByTestId('tab-critical').click();
  await page.getByTestId('critical-path-view').waitFor();
  const steps = await page.getByTestId('path-step').evaluateAll((rs) =>
    rs.map((r) => [r.cells[0].textContent, Number(r.dataset.replayed), Number(r.dataset.error)]));
  assert.equal(steps.length, cli.size);
  for (const [step, ms, err] of steps) {
    assert.ok(Math.abs(ms - cli.get(step)) < 1e-3, `${step}: page ${ms} ms, CLI ${cli.get(step)} ms`);
    assert.ok(Math.abs(err) <= 5, `${step}: replay error ${err} %`);
  }
  assert.ok(await page.getByTestId('path-item').count() > 0, 'the events on the path are listed');

  // A what-if: the top op at half its GPU time, as the CLI predicts it.
  const sel = await page.getByTestId('whatif-selection').first().inputValue();
  assert.match(sel, /^op:/, 'the panel starts with the top op');
  const expected = cliWhatIf(QWEN, '--scale', `${sel}=0.5`);
  assert.ok(expected.size > 0, 'the CLI predicts');
  await page.getByTestId('whatif-predict').click();
  await page.getByTestId('whatif-steps').waitFor({ timeout: 60000 });
  const predicted = await page.getByTestId('whatif-step').evaluateAll((rs) =>
    rs.map((r) => [r.cells[0].textContent, Number(r.dataset.replayed), Number(r.dataset.predicted)]));
  assert.equal(predicted.length, expected.size);
  for (const [step, replayed, pred] of predicted) {
    const e = expected.get(step);
    assert.ok(Math.abs(pred - e.predicted) < 1e-3, `${step}: page ${pred} ms, CLI ${e.predicted} ms`);
    assert.ok(pred <= replayed + 1e-9, `${step}: a faster op never lengthens the step`);
  }
  assert.ok(await page.getByTestId('whatif-path').locator('tr').count() > 1, 'the new path is listed');
  await page.screenshot({ path: path.join(OUT, 'critical-path.png'), fullPage: true });

  // A wrong selection is refused with its reason.
  await page.getByTestId('whatif-selection').first().fill('nonsense');
  await page.getByTestId('whatif-selection').first().dispatchEvent('change');
  await page.getByTestId('whatif-predict').click();
  await page.getByTestId('whatif-error').waitFor({ timeout: 60000 });
  assert.match(await page.getByTestId('whatif-error').textContent(), /selection `nonsense`/);

  // The timeline's first lane is the path.
  await page.getByTestId('tab-timeline').click();
  await page.locator('canvas').first().waitFor();
  await page.waitForTimeout(500);
  await page.screenshot({ path: path.join(OUT, 'critical-path-timeline.png') });
  assert.deepEqual(errors, []);
  assertLocalOnly(requests);
});
