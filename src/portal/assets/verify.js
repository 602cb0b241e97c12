// The portal page follows its session with one long-lived request at a time: the public status
// endpoint, asked to wait (`wait`) until the status differs from the one shown (`seen`), answers at
// once on a change and otherwise after the wait; the page then asks again. It shows the panel the
// server rendered for each state. Time left is counted from the server's clock (the `now`
// of each answer) and this page's monotonic clock, never from the device's date, which a kiosk
// may have wrong. Expiry is the server's to decide: at zero the page asks, it does not assume.
// Once the session ended, the page sends the student back to the business's returnUrl (rendered
// by the server, with the session id and never the result), or, in the drop-in's modal, tells the
// shop's page how it ended by postMessage to the one origin the server checked.
'use strict';
(() => {
  const root = document.getElementById('portal');
  if (!root) return;
  const FINAL = ['verified', 'not_verified', 'expired', 'cancelled', 'declined'];
  const statusUrl = '/verification/v1/sessions/' + encodeURIComponent(root.dataset.sessionId) + '/status';
  // Seconds the server may hold a request; below the usual proxy idle timeouts (60 s).
  const waitSeconds = Number(root.dataset.waitSeconds) || 25;
  // Never more than one request per this interval, whatever the server answers.
  const pollMs = Number(root.dataset.pollMs) || 1500;
  const countdown = document.getElementById('countdown');
  const announcer = document.getElementById('announcer');
  const connection = document.getElementById('connection');

  let current = root.dataset.current;
  let remainingAtSync = Date.parse(root.dataset.expiresAt) - Date.parse(root.dataset.serverNow);
  let syncedAt = performance.now();
  let timer;
  let ticker;
  let inFlight = false;
  let failures = 0;
  let askedAtZero = false;
  let warnedSoon = false;

  const remaining = () => remainingAtSync - (performance.now() - syncedAt);

  function ended(panel) {
    const status = panel === 'verified' || panel === 'not_verified' ? 'completed' : panel;
    const embedOrigin = root.dataset.embedOrigin;
    if (embedOrigin && window.parent !== window) {
      const message = { type: 'matricula:session', sessionId: root.dataset.sessionId, status };
      window.parent.postMessage(message, embedOrigin);
      return;
    }
    const returnTo = root.dataset.returnTo;
    if (returnTo) setTimeout(() => window.location.assign(returnTo), Number(root.dataset.returnDelayMs) || 3000);
  }

  function minutesSeconds(ms) {
    const total = Math.max(0, Math.ceil(ms / 1000));
    return Math.floor(total / 60) + ':' + String(total % 60).padStart(2, '0');
  }

  function announce(text) {
    announcer.textContent = text;
  }

  function renderCountdown() {
    if (!countdown) return;
    const ms = remaining();
    countdown.textContent = minutesSeconds(ms);
    countdown.parentElement.classList.toggle('soon', ms <= 60000);
    if (ms <= 60000 && ms > 0 && !warnedSoon) {
      warnedSoon = true;
      announce('Less than a minute left to scan the code.');
    }
    if (ms <= 0 && !askedAtZero) {
      askedAtZero = true;
      schedule(0);
    }
  }

  function panelFor(status) {
    if (status.status === 'completed') return status.verified ? 'verified' : 'not_verified';
    return status.status;
  }

  function show(next) {
    if (next === current) return;
    current = next;
    root.dataset.current = next;
    const focusWasInside = root.contains(document.activeElement);
    let shown;
    for (const panel of root.querySelectorAll('[data-panel]')) {
      panel.hidden = panel.dataset.panel !== next;
      if (!panel.hidden) shown = panel;
    }
    const final = FINAL.includes(next);
    for (const element of root.querySelectorAll('[data-open]')) element.hidden = final;
    for (const element of root.querySelectorAll('[data-final]')) element.hidden = !final;
    if (final) ended(next);
    if (!shown) return;
    document.title = shown.dataset.title + ' · Matricula';
    const heading = shown.querySelector('.final-heading');
    const text = shown.querySelector('p');
    announce(
      [heading, text]
        .filter(Boolean)
        .map((node) => node.textContent.trim())
        .join('. '),
    );
    // The focused control (say, "Open in wallet") may just have been hidden: give focus a place to be.
    if (focusWasInside && heading) heading.focus();
    else shown.scrollIntoView({ block: 'nearest' });
  }

  function stop() {
    clearTimeout(timer);
    clearInterval(ticker);
  }

  function schedule(ms) {
    clearTimeout(timer);
    timer = setTimeout(poll, ms);
  }

  async function poll() {
    if (inFlight) return;
    inFlight = true;
    const startedAt = performance.now();
    try {
      const query = '?wait=' + waitSeconds + '&seen=' + encodeURIComponent(current);
      const response = await fetch(statusUrl + query, { cache: 'no-store', headers: { accept: 'application/json' } });
      if (!response.ok) throw new Error('status endpoint answered ' + response.status);
      const status = (await response.json()).data;
      // The server's clock as of its answer: a long answer was sent at its end, not its start.
      remainingAtSync = Date.parse(status.expiresAt) - Date.parse(status.now);
      syncedAt = performance.now();
      if (remainingAtSync > 0) askedAtZero = false;
      failures = 0;
      connection.hidden = true;
      show(panelFor(status));
    } catch {
      failures += 1;
      // One lost answer is not worth alarming anyone; two in a row are.
      if (failures >= 2) connection.hidden = false;
    } finally {
      inFlight = false;
    }
    if (FINAL.includes(current)) return stop();
    renderCountdown();
    // The next request leaves at once after a long answer, never sooner than pollMs after the last
    // one started, and later after failures.
    const elapsed = performance.now() - startedAt;
    schedule(failures ? Math.min(pollMs * 2 ** failures, 15000) : Math.max(0, pollMs - elapsed));
  }

  if (FINAL.includes(current)) return ended(current);
  renderCountdown();
  ticker = setInterval(renderCountdown, 250);
  schedule(0);
})();
