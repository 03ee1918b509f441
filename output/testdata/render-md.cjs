// Renders Markdown read from standard input to HTML, as the bug trackers do:
// "marked" (GitHub-flavoured Markdown) or "markdown-it" (CommonMark with
// tables and raw HTML, like GitLab). Used by TestMarkdownRenders.
const which = process.argv[2];
const src = require('fs').readFileSync(0, 'utf8');
let html;
if (which === 'marked') {
  const { marked } = require('marked');
  html = marked.parse(src, { gfm: true });
} else if (which === 'markdown-it') {
  const MarkdownIt = require('markdown-it');
  html = new MarkdownIt({ html: true }).render(src);
} else {
  console.error('usage: render-md.cjs marked|markdown-it');
  process.exit(2);
}
process.stdout.write(html);
