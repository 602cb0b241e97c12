// The dashboard's one script: copy buttons for secrets shown once, and passkeys (WebAuthn) for
// signing in and registering. Everything else is plain forms, rendered and checked on the server.
'use strict';
(() => {
  for (const button of document.querySelectorAll('[data-copy]')) {
    button.addEventListener('click', async () => {
      const source = document.getElementById(button.dataset.copy);
      try {
        await navigator.clipboard.writeText(source.textContent.trim());
        button.textContent = 'Copied';
      } catch {
        const range = document.createRange();
        range.selectNodeContents(source);
        getSelection().removeAllRanges();
        getSelection().addRange(range);
        button.textContent = 'Selected: press Ctrl+C';
      }
    });
  }

  const csrf = document.querySelector('meta[name="csrf-token"]')?.content ?? '';
  async function post(url, body) {
    const response = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-csrf-token': csrf },
      body: JSON.stringify(body),
      credentials: 'same-origin',
    });
    const json = await response.json().catch(() => ({}));
    if (!response.ok) throw new Error(json.error?.message ?? 'The request failed.');
    return json;
  }

  function report(element, error) {
    element.textContent = error instanceof Error ? error.message : String(error);
    element.hidden = false;
  }

  const signIn = document.getElementById('passkey-sign-in');
  if (signIn) {
    signIn.addEventListener('click', async () => {
      const status = document.getElementById('passkey-status');
      try {
        const { options, challengeId } = await post('/dashboard/passkeys/sign-in/options', {});
        const credential = await navigator.credentials.get({
          publicKey: window.PublicKeyCredential.parseRequestOptionsFromJSON(options),
        });
        const { location } = await post('/dashboard/passkeys/sign-in', { challengeId, response: credential.toJSON() });
        window.location.assign(location);
      } catch (error) {
        report(status, error);
      }
    });
  }

  const register = document.getElementById('passkey-register');
  if (register) {
    register.addEventListener('click', async () => {
      const status = document.getElementById('passkey-status');
      try {
        const { options, challengeId } = await post('/dashboard/passkeys/register/options', {});
        const credential = await navigator.credentials.create({
          publicKey: window.PublicKeyCredential.parseCreationOptionsFromJSON(options),
        });
        await post('/dashboard/passkeys/register', { challengeId, response: credential.toJSON() });
        status.textContent = 'Passkey added. You can sign in with it now.';
        status.hidden = false;
      } catch (error) {
        report(status, error);
      }
    });
  }
})();
