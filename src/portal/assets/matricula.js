// Matricula drop-in, served at /js/v1/matricula.js for a shop's own pages:
//
//   const { sessionId, status } = await Matricula.verify(verificationUrl);
//
// On a desktop it opens the session's verification page in a modal dialog (an iframe) and
// resolves once the session has ended, with its status (completed, declined, expired, cancelled),
// or `dismissed` when the shopper closed the dialog. On a phone (or with `{ mode: 'navigate' }`)
// it goes to the page instead, and the session's returnUrl brings the student back. The page
// learns the status only, never the result: the shop's backend reads that from the API or a
// webhook. Messages are accepted only from the portal's origin, only from the frame this script
// opened, and only about that session; the portal posts only to an origin the application allows.
(function () {
  'use strict';
  if (window.Matricula) return;
  var MESSAGE = 'matricula:session';
  var ENDED = ['completed', 'declined', 'expired', 'cancelled'];

  function sessionIdOf(url) {
    var match = /\/verify\/(sess_[0-9a-z]{26})$/.exec(url.pathname);
    return match ? match[1] : null;
  }

  function prefersNavigation() {
    return window.matchMedia('(max-width: 640px)').matches;
  }

  function css(element, rules) {
    // Through the CSSOM: a shop's Content-Security-Policy without 'unsafe-inline' still allows it.
    for (var name in rules) element.style.setProperty(name, rules[name]);
    return element;
  }

  function modal(src, label) {
    var overlay = css(document.createElement('div'), {
      position: 'fixed',
      inset: '0',
      'z-index': '2147483647',
      background: 'rgba(15, 23, 42, 0.6)',
      display: 'flex',
      'align-items': 'center',
      'justify-content': 'center',
    });
    var dialog = css(document.createElement('div'), {
      position: 'relative',
      width: 'min(960px, 100vw - 32px)',
      height: 'min(760px, 100vh - 32px)',
      background: '#fff',
      'border-radius': '12px',
      overflow: 'hidden',
      'box-shadow': '0 20px 50px rgba(0, 0, 0, 0.35)',
    });
    dialog.setAttribute('role', 'dialog');
    dialog.setAttribute('aria-modal', 'true');
    dialog.setAttribute('aria-label', label);
    var close = css(document.createElement('button'), {
      position: 'absolute',
      top: '8px',
      right: '8px',
      'z-index': '1',
      font: '600 16px/1 system-ui, sans-serif',
      padding: '10px 14px',
      border: '0',
      'border-radius': '8px',
      background: '#1e293b',
      color: '#fff',
      cursor: 'pointer',
    });
    close.type = 'button';
    close.textContent = 'Close';
    var frame = css(document.createElement('iframe'), { width: '100%', height: '100%', border: '0' });
    frame.title = label;
    frame.src = src;
    dialog.appendChild(close);
    dialog.appendChild(frame);
    overlay.appendChild(dialog);
    return { overlay: overlay, close: close, frame: frame };
  }

  function verify(verificationUrl, options) {
    options = options || {};
    var url;
    try {
      url = new URL(String(verificationUrl), window.location.href);
    } catch (_error) {
      return Promise.reject(new TypeError('Matricula.verify: verificationUrl is not a URL'));
    }
    var sessionId = sessionIdOf(url);
    if (!sessionId || (url.protocol !== 'https:' && url.protocol !== 'http:'))
      return Promise.reject(new TypeError('Matricula.verify: expected a verificationUrl (…/verify/sess_…)'));
    var mode = options.mode || 'auto';
    if (mode === 'navigate' || (mode === 'auto' && prefersNavigation())) {
      window.location.assign(url.href);
      // The page is going away; the session's returnUrl brings the student back.
      return new Promise(function () {});
    }
    var portalOrigin = url.origin;
    url.searchParams.set('embed', window.location.origin);
    return new Promise(function (resolve) {
      var previousFocus = document.activeElement;
      var parts = modal(url.href, options.label || 'Student verification');
      var done = false;
      function finish(status) {
        if (done) return;
        done = true;
        window.removeEventListener('message', onMessage);
        document.removeEventListener('keydown', onKey);
        parts.overlay.remove();
        if (previousFocus && typeof previousFocus.focus === 'function') previousFocus.focus();
        resolve({ sessionId: sessionId, status: status });
      }
      function onMessage(event) {
        if (event.origin !== portalOrigin || event.source !== parts.frame.contentWindow) return;
        var data = event.data;
        if (!data || data.type !== MESSAGE || data.sessionId !== sessionId || ENDED.indexOf(data.status) < 0) return;
        finish(data.status);
      }
      function onKey(event) {
        if (event.key === 'Escape') finish('dismissed');
      }
      parts.close.addEventListener('click', function () {
        finish('dismissed');
      });
      window.addEventListener('message', onMessage);
      document.addEventListener('keydown', onKey);
      document.body.appendChild(parts.overlay);
      parts.close.focus();
    });
  }

  window.Matricula = Object.freeze({ verify: verify });
})();
