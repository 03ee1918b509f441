// Parses every ```mermaid block of the Markdown on standard input with
// Mermaid's own parser (under jsdom), and prints one line per diagram it
// rejects. NODE_PATH names the node_modules folder holding mermaid and jsdom.
import { createRequire } from 'module';
import { pathToFileURL } from 'url';
import fs from 'fs';

const req = createRequire(process.env.NODE_PATH + '/');
const { JSDOM } = await import(pathToFileURL(req.resolve('jsdom')).href);
const dom = new JSDOM('<!doctype html><html><body></body></html>');
globalThis.window = dom.window;
globalThis.document = dom.window.document;
const { default: mermaid } = await import(pathToFileURL(req.resolve('mermaid')).href);
mermaid.initialize({ startOnLoad: false });

const input = fs.readFileSync(0, 'utf8');
const blocks = [...input.matchAll(/```mermaid\n([\s\S]*?)```/g)].map((m) => m[1]);
let bad = 0;
for (const [i, b] of blocks.entries()) {
  try {
    await mermaid.parse(b);
  } catch (e) {
    bad++;
    console.log(`diagram ${i + 1}: ${String(e.message || e).split('\n').slice(0, 3).join(' | ')}`);
  }
}
console.log(`${blocks.length} diagrams`);
