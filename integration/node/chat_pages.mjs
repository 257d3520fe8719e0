// Drives the chat example's page (examples/chat) in Debian's Chromium with
// playwright-core: argv[2] is the page's URL, argv[3..] the names, one
// page (a browser context of its own: its own cookies) each. Prints
// "ready" once every page is connected, then takes JSON lines on stdin:
// {"say": NAME, "text": T} types T into NAME's form and sends it;
// {"dump": NAME} prints NAME's window.got as one JSON line. It closes the
// browser when stdin closes.
import { chromium } from 'playwright-core';
import readline from 'node:readline';

const [url, ...names] = process.argv.slice(2);
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
});
const pages = {};
for (const name of names) {
  const page = await (await browser.newContext()).newPage();
  page.on('console', (m) => process.stderr.write(`${name} console: ${m.text()}\n`));
  page.on('pageerror', (e) => process.stderr.write(`${name} pageerror: ${e}\n`));
  await page.goto(`${url}?name=${encodeURIComponent(name)}`);
  await page.waitForFunction(() => window.connected === true, null, { timeout: 20000 });
  pages[name] = page;
}
process.stdout.write('ready\n');
const rl = readline.createInterface({ input: process.stdin });
for await (const line of rl) {
  const cmd = JSON.parse(line);
  if (cmd.say) {
    await pages[cmd.say].fill('#text', cmd.text);
    await pages[cmd.say].click('button[type=submit]');
    process.stdout.write('{}\n');
  } else if (cmd.dump) {
    process.stdout.write(JSON.stringify(await pages[cmd.dump].evaluate(() => window.got)) + '\n');
  }
}
await browser.close();
