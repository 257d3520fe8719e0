// Drives the panel in Debian's Chromium with playwright-core, for
// integration/panel.py: one JSON request a line on stdin
// ({"op": ..., "args": [...]}), one JSON answer a line on stdout
// ({"value": ...} or {"error": ...}). The panel's certificate is the
// suite's self-signed one: this context accepts it.
import { chromium } from 'playwright-core';
import AxeBuilder from '@axe-core/playwright';
import readline from 'node:readline';

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  // As root (the tests' usual user) Chromium runs only without its sandbox.
  args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
});
const context = await browser.newContext({ ignoreHTTPSErrors: true });
const page = await context.newPage();
const dialogs = [];
let acceptDialogs = false; // confirm() says no unless a test says yes
page.on('dialog', async (d) => { dialogs.push(d.message()); await (acceptDialogs ? d.accept() : d.dismiss()); });
page.on('console', (m) => process.stderr.write(`console: ${m.text()}\n`));
page.on('pageerror', (e) => process.stderr.write(`pageerror: ${e}\n`));
const T = { timeout: 15000 };

const ops = {
  goto: async (url) => { const r = await page.goto(url); return r ? r.status() : 0; },
  fill: async (sel, value) => page.fill(sel, value, T),
  click: async (sel) => page.click(sel, T),
  select: async (sel, value) => page.selectOption(sel, value, T),
  text: async (sel) => page.textContent(sel, T),
  visible: async (sel) => page.isVisible(sel),
  waitVisible: async (sel) => { await page.waitForSelector(sel, { state: 'visible', ...T }); return true; },
  waitText: async (sel, text) => {
    await page.waitForFunction(([s, t]) => (document.querySelector(s)?.textContent || '').includes(t), [sel, text], T);
    return true;
  },
  // A JavaScript expression, evaluated in the page.
  eval: async (expr) => page.evaluate(expr),
  // Polled from here: the panel's CSP forbids the string eval that
  // page.waitForFunction(string) does in the page.
  waitFn: async (expr, ms) => {
    const end = Date.now() + (ms || 15000);
    for (;;) {
      if (await page.evaluate(expr)) return true;
      if (Date.now() > end) throw new Error(`not true in ${ms || 15000} ms: ${expr}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  },
  cookies: async () => context.cookies(),
  dialogs: async () => dialogs,
  acceptDialogs: async (on) => { acceptDialogs = !!on; },
  // Keys as a user types them, into what has the focus, then Enter.
  typeLine: async (text) => { await page.keyboard.type(text); await page.keyboard.press('Enter'); },
  // axe-core's violations of the WCAG 2.x A and AA rules on the page as it is.
  axe: async () => {
    const r = await new AxeBuilder({ page }).withTags(['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'best-practice']).analyze();
    return r.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.map((n) => n.target.join(' ')) }));
  },
};

const rl = readline.createInterface({ input: process.stdin });
for await (const line of rl) {
  if (!line.trim()) continue;
  const { op, args } = JSON.parse(line);
  try {
    if (!ops[op]) throw new Error(`no op ${op}`);
    const value = await ops[op](...(args || []));
    process.stdout.write(JSON.stringify({ value: value === undefined ? null : value }) + '\n');
  } catch (e) {
    process.stdout.write(JSON.stringify({ error: String(e && e.message || e) }) + '\n');
  }
}
await browser.close();
