// Drives a page in Debian's Chromium with playwright-core, for the
// integration tests: opens argv[2], waits until the page says it is
// subscribed (window.subscribed holds argv[3] names), prints "ready", then
// answers each "dump" line on stdin with window.got as one JSON line.
// It closes the browser when stdin closes.
import { chromium } from 'playwright-core';
import readline from 'node:readline';

const [url, expected] = process.argv.slice(2);
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  // As root (the tests' usual user) Chromium runs only without its sandbox.
  args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
});
const page = await browser.newPage();
page.on('console', (m) => process.stderr.write(`console: ${m.text()}\n`));
page.on('pageerror', (e) => process.stderr.write(`pageerror: ${e}\n`));
await page.goto(url);
await page.waitForFunction((n) => window.subscribed && window.subscribed.length >= n, Number(expected), {
  timeout: 20000,
});
process.stdout.write('ready\n');
const rl = readline.createInterface({ input: process.stdin });
for await (const line of rl) {
  if (line.trim() === 'dump') process.stdout.write(JSON.stringify(await page.evaluate(() => window.got)) + '\n');
}
await browser.close();
