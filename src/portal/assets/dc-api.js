// "Use a wallet on this device": the portal page asks a wallet through the browser's Digital
// Credentials API (OpenID4VP 1.0 Appendix A). Offered only where the browser has it and this page
// may use it (the Permissions-Policy allows it here, not in a frame). The requests are fetched
// once the page loads, so that the click calls navigator.credentials.get at once, while the click
// still counts as the student's gesture. The wallet's answer is encrypted to the service: the page
// only posts it back; verify.js, which follows the session, shows the outcome. A cancelled
// request (the student closed the browser's dialog or refused in the wallet) declines the session,
// as the wallet's "decline" does in every other flow.
'use strict';
(() => {
  const box = document.getElementById('dc-api');
  const button = document.getElementById('dc-api-button');
  const status = document.getElementById('dc-api-status');
  if (!box || !button || !status) return;
  if (typeof window.DigitalCredential !== 'function' || !navigator.credentials) return;
  const policy = document.featurePolicy;
  if (policy && !policy.allowsFeature('digital-credentials-get')) return;

  const say = (text) => {
    status.textContent = text;
    status.hidden = !text;
  };

  const loadRequests = () =>
    fetch(box.dataset.requestPath, { cache: 'no-store', headers: { accept: 'application/json' } }).then((response) => {
      if (!response.ok) throw new Error('the request endpoint answered ' + response.status);
      return response.json();
    });
  let requests = loadRequests();
  // A failed load is retried on the click; it must not surface as an unhandled rejection meanwhile.
  requests.catch(() => {});

  async function post(answer) {
    const response = await fetch(box.dataset.responsePath, {
      method: 'POST',
      cache: 'no-store',
      headers: { 'content-type': 'application/json', accept: 'application/json' },
      body: JSON.stringify(answer),
    });
    if (response.ok) return null;
    const body = await response.json().catch(() => ({}));
    return body.error_description || 'The service could not take your wallet’s answer.';
  }

  async function ask() {
    button.disabled = true;
    say('Choose your wallet in the window your browser opens.');
    try {
      let loaded;
      try {
        loaded = await requests;
      } catch {
        requests = loadRequests();
        loaded = await requests;
      }
      let credential;
      try {
        credential = await navigator.credentials.get({ digital: { requests: loaded.requests } });
      } catch (error) {
        if (error && error.name === 'NotAllowedError') {
          say('');
          const problem = await post({
            protocol: loaded.requests[loaded.requests.length - 1].protocol,
            data: { error: 'access_denied', error_description: 'The request was cancelled on this device.' },
          });
          if (problem) say(problem);
          return;
        }
        say('Your browser could not reach a wallet on this device. Scan a code instead.');
        return;
      }
      say('Checking your wallet’s answer…');
      const problem = await post({ protocol: credential.protocol, data: credential.data });
      say(problem ? 'Your wallet’s answer was not accepted: ' + problem : '');
    } catch {
      say('The connection failed. Try again, or scan a code instead.');
    } finally {
      button.disabled = false;
    }
  }

  button.addEventListener('click', ask);
  box.hidden = false;
})();
