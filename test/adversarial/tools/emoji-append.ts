// One append of a 275 KB emoji-ZWJ wall (and friends), timed; then a compress of the session.
import { Api } from './http.js';

const api = new Api(process.env.BASE ?? 'http://127.0.0.1:3100', process.env.KEY!);
const walls: [string, string][] = [
  ['ascii letters', 'a'.repeat(270_000)],
  ['emoji zwj', '\u{1F600}\u200d\u{1F525}'.repeat(Number(process.env.N ?? 25_000))],
  ['cjk', '\u4e2d'.repeat(90_000)],
  ['combining marks', `e${'\u0301'.repeat(130_000)}`],
];
for (const [name, text] of walls) {
  const id = (await api.create({})).json.session.sessionId as string;
  await api.append(id, [{ role: 'user', content: 'HUMAN' }]);
  const r = await api.call('POST', `/sessions/${id}/messages`, { messages: [{ role: 'assistant', content: text }] }, {}, 120_000);
  console.log(name, 'append', r.status, `${r.ms} ms`, r.status !== 200 ? r.text.slice(0, 120) : '');
}
