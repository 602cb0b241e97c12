// The sandbox wallet answers like a real wallet, through the public wallet endpoints: it posts
// the student's consent, has the service build the sandbox student's presentation (the only
// step a phone would do itself), then submits that presentation and shows the outcome.
'use strict';
(() => {
  const root = document.getElementById('wallet');
  if (!root) return;
  const sessionId = root.dataset.sessionId;
  const nonce = root.dataset.nonce;
  let status = root.dataset.status;
  const sessionPath = '/verification/v1/sessions/' + encodeURIComponent(sessionId);
  const form = document.getElementById('answer');
  const buttons = [document.getElementById('approve'), document.getElementById('decline')];
  const progress = document.getElementById('progress');
  const errorBox = document.getElementById('wallet-error');
  const outcome = document.getElementById('outcome');

  const REASONS = {
    student_inactive: 'The credential shows a student who is no longer enrolled.',
    credential_expired: 'The credential has expired.',
    claim_not_disclosed: 'A claim the service asked for was not shared.',
    too_many_attempts: 'Too many answers were rejected, so the session was closed.',
  };

  async function post(path, body) {
    let response;
    try {
      response = await fetch(path, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json' },
        body: JSON.stringify(body),
        cache: 'no-store',
      });
    } catch {
      throw new Error('The service cannot be reached. Check the connection and try again.');
    }
    const json = await response.json().catch(() => null);
    if (!response.ok || !json || !json.success) {
      throw new Error(
        (json && json.error && json.error.message) || 'The service answered with status ' + response.status + '.',
      );
    }
    return json.data;
  }

  function value(name) {
    return form.elements.namedItem(name).value;
  }

  function setBusy(busy, message) {
    form.setAttribute('aria-busy', String(busy));
    // Approve stays disabled when this installation can build none of the session's formats.
    for (const button of buttons) button.disabled = busy || button.dataset.unavailable === 'true';
    progress.textContent = message || '';
  }

  function showError(message) {
    errorBox.textContent = message;
    errorBox.hidden = false;
    errorBox.setAttribute('tabindex', '-1');
    errorBox.focus();
  }

  function finish(kind, reason) {
    form.hidden = true;
    outcome.hidden = false;
    for (const panel of outcome.querySelectorAll('[data-outcome]')) panel.hidden = panel.dataset.outcome !== kind;
    if (reason) outcome.querySelector('[data-slot="reason"]').textContent = reason;
    const shown = outcome.querySelector('[data-outcome="' + kind + '"]');
    document.title = shown.querySelector('.final-heading').textContent + ' · Sandbox wallet · Matricula';
    shown.querySelector('.final-heading').focus();
  }

  async function answer(work) {
    errorBox.hidden = true;
    try {
      await work();
    } catch (error) {
      setBusy(false);
      showError(error.message);
    }
  }

  const approve = () =>
    answer(async () => {
      const format = value('format');
      if (status === 'pending') {
        setBusy(true, 'Recording your consent…');
        await post(sessionPath + '/consent', { nonce, decision: 'approved' });
        status = 'consented';
      }
      setBusy(true, 'Building the ' + format + ' presentation…');
      const student = {
        university: value('university'),
        academicLevel: value('academicLevel'),
        active: value('active') === 'true',
        expired: value('expired') === 'true',
      };
      const built = await post('/wallet/sandbox/presentation', { sessionId, nonce, format, student });
      setBusy(true, 'Sending the presentation…');
      const result = await post(sessionPath + '/presentation', { nonce, format, presentation: built.presentation });
      setBusy(false);
      finish(
        result.verified ? 'verified' : 'not_verified',
        result.verified ? '' : REASONS[result.failureReason] || result.failureReason,
      );
    });

  const decline = () =>
    answer(async () => {
      setBusy(true, 'Declining…');
      await post(sessionPath + '/consent', { nonce, decision: 'declined' });
      setBusy(false);
      finish('declined');
    });

  form.addEventListener('submit', (event) => {
    event.preventDefault();
    approve();
  });
  document.getElementById('decline').addEventListener('click', decline);
})();
