// Builds an HTML page from Markdown on standard input, rendered as GitHub
// does (marked, GitHub-flavoured), its mermaid blocks drawn by Mermaid in
// the browser. NODE_PATH names the node_modules folder holding marked
// and mermaid.
import { createRequire } from "node:module";
import { pathToFileURL } from "node:url";
import { readFileSync } from "node:fs";

const req = createRequire(process.env.NODE_PATH + "/");
const markedMod = await import(pathToFileURL(req.resolve("marked")).href);
const marked = markedMod.marked ?? markedMod.default.marked;
const mermaidJS = req.resolve("mermaid").replace(/[^/]*$/, "mermaid.min.js");

const md = readFileSync(0, "utf8");
let html = marked.parse(md, { gfm: true });
html = html.replace(/<pre><code class="language-mermaid">([\s\S]*?)<\/code><\/pre>/g, (_, body) => `<pre class="mermaid">${body}</pre>`);
process.stdout.write(`<!doctype html><html><head><meta charset="utf-8"><title>report</title>
<style>body{max-width:980px;margin:16px auto;padding:0 16px;font-family:-apple-system,"Segoe UI",Helvetica,Arial,sans-serif;font-size:14px;line-height:1.5}
table{border-collapse:collapse}td,th{border:1px solid #d0d7de;padding:4px 10px}pre{background:#f6f8fa;padding:12px;overflow:auto}code{font-size:85%}</style>
<script src="${pathToFileURL(mermaidJS).href}"></script></head><body>${html}
<div id="result" style="display:none">pending</div>
<script>
mermaid.initialize({ startOnLoad: false });
mermaid.run({ querySelector: "pre.mermaid", suppressErrors: true }).then(() => {
  const svgs = document.querySelectorAll("pre.mermaid svg").length;
  const errs = [...document.querySelectorAll("pre.mermaid")].filter(p => /Syntax error/.test(p.textContent)).length;
  document.getElementById("result").textContent = "rendered " + svgs + " diagrams, " + errs + " syntax errors";
}).catch(e => { document.getElementById("result").textContent = "error: " + e.message; });
</script></body></html>`);
