// "Sign in with your university" on the portal page: a type-ahead search over the identity
// providers registered for the session's environment, remembering the last choice on this device.
(() => {
  'use strict';
  const root = document.querySelector('[data-university-login]');
  if (!root) return;
  const input = root.querySelector('#idp-search');
  const list = root.querySelector('#idp-results');
  const last = root.querySelector('[data-last-choice]');
  const status = root.querySelector('#idp-status');
  const startUrl = root.getAttribute('data-start');
  const searchUrl = root.getAttribute('data-search');
  const nonce = root.getAttribute('data-nonce');
  const environment = root.getAttribute('data-environment');
  const STORAGE_KEY = `matricula.university.${environment}`;
  let timer;
  let sequence = 0;

  const go = (idp) => {
    try {
      localStorage.setItem(STORAGE_KEY, JSON.stringify({ id: idp.id, name: idp.name, domain: idp.domain }));
    } catch {
      // Private browsing: nothing remembered, nothing lost.
    }
    const url = new URL(startUrl, location.href);
    url.searchParams.set('nonce', nonce);
    url.searchParams.set('idp', idp.id);
    location.assign(url.toString());
  };

  const option = (idp, index) => {
    const li = document.createElement('li');
    li.setAttribute('role', 'option');
    li.id = `idp-option-${index}`;
    const button = document.createElement('button');
    button.type = 'button';
    button.className = 'idp-option';
    const name = document.createElement('span');
    name.className = 'idp-name';
    name.textContent = idp.name;
    const where = document.createElement('span');
    where.className = 'idp-where';
    where.textContent = `${idp.domain} · ${idp.country}`;
    button.append(name, where);
    button.addEventListener('click', () => go(idp));
    li.append(button);
    return li;
  };

  const render = (providers, query) => {
    list.replaceChildren(...providers.map(option));
    input.setAttribute('aria-expanded', providers.length > 0 ? 'true' : 'false');
    status.textContent =
      query === '' ? '' : providers.length === 0 ? 'No university found.' : `${providers.length} found.`;
  };

  const search = async (query) => {
    const mine = ++sequence;
    const url = new URL(searchUrl, location.href);
    url.searchParams.set('q', query);
    try {
      const res = await fetch(url, { headers: { accept: 'application/json' } });
      if (!res.ok || mine !== sequence) return;
      render((await res.json()).data, query);
    } catch {
      if (mine === sequence) status.textContent = 'Search is not available right now.';
    }
  };

  input.addEventListener('input', () => {
    clearTimeout(timer);
    const query = input.value.trim();
    timer = setTimeout(() => search(query), 120);
  });
  input.addEventListener('keydown', (event) => {
    if (event.key === 'Enter') {
      event.preventDefault();
      const first = list.querySelector('button');
      if (first) first.click();
    }
  });

  try {
    const remembered = JSON.parse(localStorage.getItem(STORAGE_KEY) || 'null');
    if (remembered && typeof remembered.id === 'string' && typeof remembered.name === 'string') {
      const button = last.querySelector('button');
      button.textContent = `Continue with ${remembered.name}`;
      button.addEventListener('click', () => go(remembered));
      last.hidden = false;
    }
  } catch {
    // Nothing remembered.
  }
  search('');
})();
