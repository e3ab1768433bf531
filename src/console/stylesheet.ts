// The console's only stylesheet, served at /admin/static/console.css (the CSP forbids inline styles).
export const CONSOLE_CSS = `body { font: 16px/1.5 system-ui, sans-serif; margin: 0; color: #1a1a1a; background: #fafafa; }
header { background: #243447; color: #fff; padding: .5rem 1rem; display: flex; flex-wrap: wrap; gap: .75rem; align-items: center; }
header a { color: #fff; }
header form { margin-left: auto; }
main { padding: 1rem; max-width: 1200px; }
table { border-collapse: collapse; width: 100%; display: block; overflow-x: auto; }
th, td { text-align: left; padding: .3rem .6rem; border-bottom: 1px solid #ddd; vertical-align: top; }
label { display: inline-block; margin-right: .3rem; }
input, select, button { font: inherit; padding: .25rem .5rem; }
a:focus, button:focus, input:focus, select:focus { outline: 3px solid #e8a317; outline-offset: 2px; }
.error { color: #a00000; font-weight: bold; }
.notice { color: #135e13; }
dl { display: grid; grid-template-columns: max-content 1fr; gap: .2rem 1rem; }
/* Long identifiers (migration names, ids, addresses) wrap instead of widening a phone-sized page. */
code, dd { overflow-wrap: anywhere; }
`;
