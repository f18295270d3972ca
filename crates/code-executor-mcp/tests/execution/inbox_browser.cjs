// Drives Debian's Chromium headless through playwright-core for tests/execution/inbox.rs:
// one browser for the whole test, one fresh context (no cookies, its own headers) per
// command. Commands arrive as JSON lines on stdin, answers leave as JSON lines on stdout.
//
//   {"op": "open", "url", "headers"?}
//       -> {status, ids: [approval ids on the page], text, scripts, pwned}
//   {"op": "answer", "url", "headers"?, "id", "what": "approve"|"deny", "waitMs"}
//       waits (bounded) for the approval on the page, clicks its button, follows the
//       redirect -> {status, found, ids}
//   {"op": "quit"}
//
// Environment: PLAYWRIGHT_CORE (the package's directory), CHROMIUM (the executable).
"use strict";
const { chromium } = require(process.env.PLAYWRIGHT_CORE);
const readline = require("readline");

async function onPage(browser, cmd, f) {
  const context = await browser.newContext({ extraHTTPHeaders: cmd.headers || {} });
  try {
    const page = await context.newPage();
    // Anything the page would run leaves a mark here (the CSP and escaping must stop it).
    await page.addInitScript(() => { window.__pwned = false; });
    const response = await page.goto(cmd.url);
    return await f(page, response);
  } finally {
    await context.close();
  }
}

async function state(page, response) {
  return {
    status: response ? response.status() : 0,
    ids: await page.$$eval("section.pending", (s) => s.map((e) => Number(e.id.replace("approval-", "")))),
    text: await page.evaluate(() => document.body ? document.body.innerText : ""),
    scripts: await page.evaluate(() => document.querySelectorAll("script, img, iframe").length),
    pwned: await page.evaluate(() => window.__pwned),
  };
}

async function run(browser, cmd) {
  switch (cmd.op) {
    case "open":
      return onPage(browser, cmd, state);
    case "answer":
      return onPage(browser, cmd, async (page) => {
        const section = `#approval-${cmd.id}`;
        // Bounded: the approval may arrive a little after the page was asked for.
        const deadline = Date.now() + (cmd.waitMs || 10000);
        while (!(await page.$(section))) {
          if (Date.now() > deadline) return { status: 0, found: false, ids: [] };
          await page.waitForTimeout(50);
          await page.reload();
        }
        const [response] = await Promise.all([
          page.waitForNavigation(),
          page.click(`${section} button[value=${cmd.what}]`),
        ]);
        return { ...(await state(page, response)), found: true };
      });
    default:
      throw new Error(`unknown op ${cmd.op}`);
  }
}

(async () => {
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
    args: ["--no-sandbox"],
  });
  console.log(JSON.stringify({ ready: browser.version() }));
  const rl = readline.createInterface({ input: process.stdin });
  for await (const line of rl) {
    const cmd = JSON.parse(line);
    if (cmd.op === "quit") break;
    try {
      console.log(JSON.stringify(await run(browser, cmd)));
    } catch (e) {
      console.log(JSON.stringify({ error: String(e && e.stack || e) }));
    }
  }
  rl.close();
  await browser.close();
  process.exit(0);
})().catch((e) => {
  console.log(JSON.stringify({ error: String(e && e.stack || e) }));
  process.exit(1);
});
