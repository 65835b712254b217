// Keyboard use (issue #15, item 2): `?` opens the list of every shortcut and Esc closes it;
// number keys switch among the tabs on screen; keys typed into a field or handled by the
// timeline's canvas stay there; the file input, the sample button and every tab are reachable
// with Tab alone.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { OUT, startApp, stopApp, openApp, assertLocalOnly } from './harness.mjs';

before(startApp);
after(stopApp);

const activeTab = (page) => page.evaluate(() =>
  document.querySelector('[role=tab].active')?.getAttribute('data-testid'));

test('shortcuts: ? lists them, digits switch tabs, fields and the timeline keep their keys', async () => {
  const { page, errors, requests } = await openApp();
  // Before a trace is loaded, digits do nothing and ? still opens the list.
  await page.keyboard.press('3');
  assert.equal(await activeTab(page), undefined);
  await page.keyboard.press('?');
  const help = page.getByTestId('help');
  await help.waitFor();
  const rows = await help.locator('tbody tr').count();
  assert.ok(rows >= 8, `${rows} shortcuts listed`);
  assert.match(await help.textContent(), /whole trace/);
  await page.screenshot({ path: path.join(OUT, 'help-overlay.png') });
  await page.keyboard.press('Escape');
  await help.waitFor({ state: 'detached' });

  // Tab alone reaches the file input, the sample button and, after a load, every tab.
  const reached = new Set();
  for (let i = 0; i < 8; i++) {
    await page.keyboard.press('Tab');
    reached.add(await page.evaluate(() => document.activeElement?.getAttribute('data-testid')));
  }
  for (const id of ['help-open', 'trace-input', 'open-sample']) assert.ok(reached.has(id), `${id} not reachable: ${[...reached]}`);
  await page.getByTestId('open-sample').focus();
  await page.keyboard.press('Enter');
  await page.locator('body[data-complete-ms]').waitFor({ timeout: 30000 });
  const tabs = await page.locator('[role=tab]:not(.hidden)').evaluateAll((els) => els.map((e) => e.getAttribute('data-testid')));
  for (let i = 0; i < 40 && tabs.length; i++) {
    await page.keyboard.press('Tab');
    const id = await page.evaluate(() => document.activeElement?.getAttribute('data-testid'));
    const at = tabs.indexOf(id);
    if (at >= 0) tabs.splice(at, 1);
  }
  assert.deepEqual(tabs, [], 'tabs not reachable with Tab');

  // Digits: the n-th tab on screen (no reference loaded: Compare is hidden).
  await page.locator('body').click({ position: { x: 5, y: 5 } });
  await page.keyboard.press('4');
  assert.equal(await activeTab(page), 'tab-ops');
  // A digit typed into the ops filter is text, not a tab switch.
  await page.getByTestId('ops-filter').fill('');
  await page.getByTestId('ops-filter').press('2');
  assert.equal(await activeTab(page), 'tab-ops');
  assert.equal(await page.getByTestId('ops-filter').inputValue(), '2');
  await page.getByTestId('ops-filter').blur();
  await page.keyboard.press('6');
  assert.equal(await activeTab(page), 'tab-timeline');
  // On the focused canvas, 0 is the timeline's "whole trace", not a tab switch.
  await page.getByTestId('timeline').focus();
  await page.keyboard.press('1');
  assert.equal(await activeTab(page), 'tab-timeline');
  await page.locator('body').click({ position: { x: 5, y: 5 } });
  await page.keyboard.press('1');
  assert.equal(await activeTab(page), 'tab-overview');
  // 9: the ninth visible tab (the Critical path tab follows the timeline's).
  await page.keyboard.press('9');
  assert.equal(await activeTab(page), 'tab-report');
  // The help button toggles the same list.
  await page.getByTestId('help-open').click();
  await page.getByTestId('help').waitFor();
  await page.getByTestId('help-close').click();
  await page.getByTestId('help').waitFor({ state: 'detached' });

  assert.deepEqual(errors, []);
  assertLocalOnly(requests);
});
