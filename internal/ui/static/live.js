// Soul Stack UI: live refresh of run and task pages, and one open result
// panel at a time. No framework. A container with data-live="URL" is
// refreshed from URL (a server-rendered fragment) every data-poll ms until
// the fragment says it is finished; with data-sse="URL" an EventSource
// triggers refreshes at once and the poll slows down to a safety net.
(function () {
  'use strict';

  function follow(box) {
    var url = box.getAttribute('data-live');
    var fast = parseInt(box.getAttribute('data-poll'), 10) || 2000;
    var timer = null, busy = false, again = false, stopped = false, es = null, count = 0;

    function every(ms) {
      if (timer) clearInterval(timer);
      timer = stopped ? null : setInterval(refresh, ms);
    }
    function stop() {
      stopped = true;
      if (timer) clearInterval(timer);
      timer = null;
      if (es) { es.close(); es = null; }
      box.setAttribute('data-state', 'finished');
    }
    function swap(html) {
      var open = [];
      box.querySelectorAll('details[open][id]').forEach(function (d) { open.push(d.id); });
      box.innerHTML = html;
      open.forEach(function (id) {
        var d = document.getElementById(id);
        if (d) d.open = true;
      });
      count++;
      box.setAttribute('data-refreshed', String(count));
      var root = box.querySelector('[data-finished]');
      if (root && root.getAttribute('data-finished') === 'true') stop();
    }
    function refresh() {
      if (stopped) return;
      if (busy) { again = true; return; }
      busy = true;
      fetch(url, { credentials: 'same-origin', cache: 'no-store' })
        .then(function (res) {
          if (res.status === 401) { stop(); window.location.reload(); return null; }
          return res.ok ? res.text() : null;
        })
        .then(function (html) { if (html !== null && !stopped) swap(html); })
        .catch(function () { /* keep polling: the keeper may be restarting */ })
        .then(function () {
          busy = false;
          if (again) { again = false; refresh(); }
        });
    }

    every(fast);
    var sse = box.getAttribute('data-sse');
    if (sse && window.EventSource) {
      es = new EventSource(sse);
      var fallBack = function () {
        if (es) { es.close(); es = null; }
        every(fast);
      };
      es.addEventListener('hello', function () { every(fast * 5); refresh(); });
      es.addEventListener('change', refresh);
      es.addEventListener('done', function () { fallBack(); refresh(); });
      es.addEventListener('poll', fallBack);
      es.onerror = fallBack;
    }
  }

  // Only one result panel is open at a time: opening one closes the others.
  document.addEventListener('toggle', function (ev) {
    var d = ev.target;
    if (!d.classList || !d.classList.contains('result') || !d.open) return;
    document.querySelectorAll('details.result[open]').forEach(function (o) {
      if (o !== d) o.open = false;
    });
  }, true);

  document.addEventListener('keydown', function (ev) {
    if (ev.key !== 'Escape') return;
    document.querySelectorAll('details.result[open]').forEach(function (o) { o.open = false; });
  });

  function start() { document.querySelectorAll('[data-live]').forEach(follow); }
  if (document.readyState === 'loading') {
    document.addEventListener('DOMContentLoaded', start);
  } else {
    start();
  }
})();
