import assert from 'node:assert/strict';
import { test } from 'node:test';
import { indexProviders, searchProviders } from '../../src/domain/provider-search.ts';

const index = indexProviders([
  { id: 'idp_1', name: 'Universität Zürich', domain: 'uzh.ch', country: 'CH' },
  { id: 'idp_2', name: 'Universiteit Leiden', domain: 'leidenuniv.nl', country: 'NL' },
  { id: 'idp_3', name: 'Zürcher Hochschule', domain: 'zhaw.ch', country: 'CH' },
  { id: 'idp_4', name: 'Universidad de Pruebas', domain: 'pruebas.example', country: 'ES' },
]);
const ids = (query: string, limit = 20) => searchProviders(index, query, limit).map((p) => p.id);

test('the portal search: name, domain or country, accents and case ignored, every word must match', () => {
  assert.deepEqual(ids('zurich'), ['idp_1']);
  assert.deepEqual(ids('ZHAW'), ['idp_3']);
  assert.deepEqual(ids('ch'), ['idp_1', 'idp_3']);
  assert.deepEqual(ids('univ leiden'), ['idp_2']);
  assert.deepEqual(ids('nothing here'), []);
});

test('names that start with the query come first; the rest by name; a limit holds', () => {
  assert.deepEqual(ids('zür'), ['idp_3', 'idp_1']);
  assert.deepEqual(ids('', 2), ['idp_4', 'idp_1']);
});
