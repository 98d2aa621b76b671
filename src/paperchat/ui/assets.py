"""CSS and JavaScript of the app (hash navigation, J/K/Enter/S/M/N keys, rating links, citation clicks, [ and ]
page keys)."""

CSS = """
.pc-hidden {display:none !important}
.pc-brand h1 {margin:0; font-size:1.6rem} .pc-brand p {margin:0; color:#6b7280}
.pc-cards {display:grid; grid-template-columns:repeat(auto-fill,minmax(260px,1fr)); gap:12px}
.pc-card {border:1px solid #e5e7eb; border-radius:10px; padding:12px 14px; background:#fff}
.pc-card h3 {margin:0 0 4px 0; font-size:1.05rem} .pc-count {font-weight:600; margin:2px 0}
.pc-card h3 {text-align:left}
.pc-card h3 .pc-tag {display:inline; text-align:left; background:none; padding:0; margin:0; font-size:1.05rem;
  color:#1e1b4b !important; text-decoration:none}
.pc-card h3 .pc-tag:hover {text-decoration:underline} .pc-card:hover {border-color:#c7d2fe}
.pc-momentum {color:#374151; font-size:.92rem; margin:4px 0}
.pc-tag {display:inline-block; background:#eef2ff; color:#3730a3 !important; border-radius:999px; padding:1px 9px;
  margin:1px 2px; font-size:.8rem; text-decoration:none}
.pc-fine {background:#ecfdf5; color:#065f46 !important; border:1px solid #a7f3d0}  /* a discovered topic, not a hand-written one */
.pc-export {margin:4px 0}
.pc-following {font-size:.75rem; background:#dcfce7; color:#166534; border-radius:6px; padding:1px 6px}
.pc-list {display:flex; flex-direction:column; gap:2px}
.pc-row {padding:8px 10px; border-radius:8px; border-left:4px solid transparent}
.pc-row:hover {background:#f9fafb}
.pc-row.pc-selected {background:#eef2ff; border-left-color:#4f46e5}
.pc-row-title {font-weight:600} .pc-row-title a {color:#111827; text-decoration:none}
.pc-row-meta {color:#6b7280; font-size:.85rem; margin:2px 0}
.pc-saved {color:#f59e0b; margin-right:4px} .pc-pdf {font-size:.7rem; background:#fee2e2; color:#991b1b; border-radius:4px; padding:0 4px}
.pc-dim {color:#6b7280; font-size:.85rem} .pc-empty {color:#6b7280; font-style:italic}
.pc-chart {width:100%; height:120px} .pc-bar {fill:#c7d2fe} .pc-bar-recent {fill:#4f46e5} .pc-axis {font-size:10px; fill:#6b7280}
.pc-momentum-box {border:1px solid #e5e7eb; border-radius:10px; padding:10px 12px; margin:8px 0}
.pc-btn {display:inline-block; border:1px solid #d1d5db; border-radius:8px; padding:4px 10px; margin-right:6px; text-decoration:none}
.pc-abstract {line-height:1.5}
.pc-error {background:#fef2f2; color:#991b1b; border:1px solid #fecaca; border-radius:8px; padding:8px 12px}
.pc-sources h4 {margin:6px 0} .pc-source {border-top:1px solid #f3f4f6; padding:6px 0; font-size:.88rem}
.pc-source blockquote {margin:4px 0 0 12px; color:#374151; font-style:italic}
.pc-cited {background:#fafafa}
.pc-keys {color:#6b7280; font-size:.8rem}
.pc-source[data-page] {cursor:pointer} .pc-source[data-page]:hover {background:#f5f3ff}
.pc-page-meta {color:#6b7280; font-size:.85rem; margin:2px 0 6px 0} .pc-found {color:#166534} .pc-missing {color:#92400e}
.pc-page-scroll {max-height:88vh; overflow:auto; border:1px solid #e5e7eb; border-radius:6px; background:#f3f4f6}
.pc-page {position:relative; margin:0 auto; background:#fff} .pc-page-img {display:block; width:100%; height:auto}
.pc-rate-links {margin-left:6px; white-space:nowrap} .pc-rate {font-size:.75rem; color:#6b7280 !important; text-decoration:none; margin-right:4px}
.pc-rate:hover {color:#4f46e5 !important} .pc-rated {color:#4f46e5 !important; font-weight:600}
.pc-reasons {font-size:.8rem; color:#065f46; margin:2px 0} .pc-reason {background:#ecfdf5; border-radius:6px; padding:0 6px; margin-right:4px}
.pc-compare-scroll {overflow-x:auto} .pc-compare {border-collapse:collapse; font-size:.85rem}
.pc-compare th, .pc-compare td {border:1px solid #e5e7eb; padding:6px 8px; vertical-align:top; min-width:160px; text-align:left}
.pc-compare th {background:#f9fafb} .pc-cell-link {color:#111827 !important; text-decoration:none} .pc-cell-link:hover {text-decoration:underline}
.pc-low {color:#b45309; font-weight:600} .pc-low-cell {background:#fffbeb} .pc-not-stated {background:#f9fafb}
.pc-hl {position:absolute; background:rgba(249,115,22,.25); outline:2px solid rgba(234,88,12,.85); border-radius:2px; mix-blend-mode:multiply}
"""

JS = """
<script>
(function () {
  if (window.pcReady) return; window.pcReady = true;
  window.pcSelected = null;
  function fill(box, value) {
    const setter = Object.getOwnPropertyDescriptor(Object.getPrototypeOf(box), 'value').set;
    setter.call(box, value);
    box.dispatchEvent(new Event('input', {bubbles: true}));
  }
  // the quote (of a clicked citation) travels in its own hidden box beside the nav value
  function setNav(value, quote) {
    const box = document.querySelector('#pc-nav textarea, #pc-nav input');
    const qbox = document.querySelector('#pc-quote textarea, #pc-quote input');
    const btn = document.querySelector('#pc-nav-btn');
    if (!box || !btn || !qbox) { setTimeout(function () { setNav(value, quote); }, 200); return; }
    fill(qbox, quote || '');
    fill(box, value);
    setTimeout(function () { btn.click(); }, 50);
  }
  window.pcNav = setNav;
  function onHash() { const h = decodeURIComponent(location.hash.replace(/^#/, '')); if (h) setNav(h + '|' + Date.now(), ''); }
  // a citation [n] in an answer, or a row of the sources panel: open its page with the quote highlighted
  // (the link's title, or the row's data-quote); by mouse, or Enter on the focused link or row
  function openCitation(e) {
    const t = e.target; if (!t || !t.closest) return;
    const a = t.closest('a[href^="#paper/"]');
    const row = t.closest('.pc-source[data-page]');
    if (!a && !row) return;
    let href = a ? decodeURIComponent(a.getAttribute('href').slice(1)) : 'paper/' + row.dataset.paper + '/' + row.dataset.page;
    const quote = (row && row.dataset.quote) || (a && a.getAttribute('title')) || '';
    if (!quote || !/^paper\\/.+\\/\\d+$/.test(href)) return;  // a plain paper link: the hash does it
    e.preventDefault(); e.stopPropagation();
    history.replaceState(null, '', '#' + href);
    setNav(href + '|' + Date.now(), quote);
  }
  document.addEventListener('click', openCitation, true);
  // "more like this" / "not interested": sent through the nav box (a hash link would not fire twice)
  document.addEventListener('click', function (e) {
    const a = e.target && e.target.closest ? e.target.closest('a.pc-rate') : null; if (!a) return;
    e.preventDefault(); e.stopPropagation();
    setNav('rate/' + a.dataset.paper + '/' + a.dataset.rate + '|' + Date.now(), '');
  }, true);
  // a new page with a highlight: scroll the viewer so that the passage sits in its upper third
  new MutationObserver(function () {
    const v = document.querySelector('#pc-viewer .pc-viewer'); if (!v || v.dataset.scrolled) return;
    v.dataset.scrolled = '1';
    const box = v.querySelector('.pc-page-scroll'), hl = v.querySelector('.pc-hl');
    if (!box) return;
    const img = v.querySelector('.pc-page-img');
    function go() { box.scrollTop = hl ? Math.max(0, hl.offsetTop - box.clientHeight / 3) : 0; }
    if (img && !img.complete) img.addEventListener('load', go, {once: true}); else go();
  }).observe(document.body, {childList: true, subtree: true});
  document.addEventListener('keydown', function (e) {
    if (e.key === 'Enter' && e.target && e.target.classList && e.target.classList.contains('pc-source')) openCitation(e);
    const t = e.target;
    if (t && (t.tagName === 'INPUT' || t.tagName === 'TEXTAREA' || t.tagName === 'SELECT' || t.isContentEditable)) return;
    const col = document.querySelector('#pc-viewer-col');
    if (!col || col.offsetParent === null || e.ctrlKey || e.metaKey || e.altKey) return;
    const id = e.key === '[' ? '#pc-prev' : e.key === ']' ? '#pc-next' : null;  // [ and ] turn the pages
    if (id) { const b = document.querySelector(id); if (b) { b.click(); e.preventDefault(); } }
  }, true);
  window.addEventListener('hashchange', onHash);
  window.addEventListener('load', function () { setTimeout(onHash, 600); });
  function visibleRows() {
    const out = [];
    document.querySelectorAll('.pc-list').forEach(function (l) {
      if (l.offsetParent !== null) l.querySelectorAll('.pc-row').forEach(function (r) { out.push(r); });
    });
    return out;
  }
  function mark(rows, i) {
    rows.forEach(function (r) { r.classList.remove('pc-selected'); });
    if (i >= 0 && i < rows.length) {
      rows[i].classList.add('pc-selected'); window.pcSelected = rows[i].dataset.paper; rows[i].scrollIntoView({block: 'nearest'});
    }
  }
  document.addEventListener('keydown', function (e) {
    const t = e.target;
    if (t && (t.tagName === 'INPUT' || t.tagName === 'TEXTAREA' || t.tagName === 'SELECT' || t.isContentEditable)) return;
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    const rows = visibleRows(); if (!rows.length) return;
    let i = rows.findIndex(function (r) { return r.classList.contains('pc-selected'); });
    const k = e.key.toLowerCase();
    if (k === 'j') { mark(rows, Math.min(rows.length - 1, i + 1)); e.preventDefault(); }
    else if (k === 'k') { mark(rows, Math.max(0, i - 1)); e.preventDefault(); }
    else if (e.key === 'Enter' && i >= 0) { location.hash = 'paper/' + rows[i].dataset.paper; e.preventDefault(); }
    else if (k === 's' && i >= 0) { setNav('save/' + rows[i].dataset.paper + '|' + Date.now()); e.preventDefault(); }
    else if ((k === 'm' || k === 'n') && i >= 0) {
      setNav('rate/' + rows[i].dataset.paper + '/' + (k === 'm' ? 'up' : 'down') + '|' + Date.now()); e.preventDefault();
    }
  });
  // keep the selection when a list is re-rendered (after S, or a page change)
  new MutationObserver(function () {
    if (!window.pcSelected) return;
    const rows = visibleRows();
    if (rows.some(function (r) { return r.classList.contains('pc-selected'); })) return;
    const i = rows.findIndex(function (r) { return r.dataset.paper === window.pcSelected; });
    if (i >= 0) rows[i].classList.add('pc-selected');
  }).observe(document.body, {childList: true, subtree: true});
})();
</script>
"""
