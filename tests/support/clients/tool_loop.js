// A two-turn tool loop against DeepSeek's chat completions, at its real address, as a Node script a user would run:
// it knows nothing of any proxy (Node 20's fetch and https module ignore proxy variables), and drops
// reasoning_content from turn 2. `node tool_loop.js fetch|https`: prints the final answer, exits with $CLIENT_EXIT
// (0 if unset) once it has one, 1 on any failure. The Python twin is tool_loop.py.
'use strict';
const https = require('https');

const URL_ = 'https://api.deepseek.com/chat/completions';
const MODEL = 'deepseek-v4-flash';
const QUESTION = { role: 'user', content: 'What is in the deleteme directory?' };
const TOOLS = [
  {
    type: 'function',
    function: {
      name: 'list_directory',
      description: 'List the files in a directory.',
      parameters: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
    },
  },
];
const HEADERS = { authorization: `Bearer ${process.env.FAKE_API_KEY}`, 'content-type': 'application/json' };

async function postFetch(body) {
  const answer = await fetch(URL_, { method: 'POST', headers: HEADERS, body: JSON.stringify(body) });
  const text = await answer.text();
  if (!answer.ok) throw new Error(`${answer.status}: ${text}`);
  return JSON.parse(text);
}

function postHttps(body) {
  return new Promise((resolve, reject) => {
    const request = https.request(URL_, { method: 'POST', headers: HEADERS }, (answer) => {
      let text = '';
      answer.setEncoding('utf8');
      answer.on('data', (piece) => (text += piece));
      answer.on('end', () =>
        answer.statusCode === 200 ? resolve(JSON.parse(text)) : reject(new Error(`${answer.statusCode}: ${text}`)),
      );
    });
    request.on('error', reject);
    request.end(JSON.stringify(body));
  });
}

async function toolLoop(post) {
  const turn = (await post({ model: MODEL, messages: [QUESTION], tools: TOOLS })).choices[0].message;
  const calls = turn.tool_calls.map((c) => ({
    id: c.id,
    type: 'function',
    function: { name: c.function.name, arguments: c.function.arguments },
  }));
  const assistant = { role: 'assistant', content: '', tool_calls: calls }; // reasoning_content dropped
  const results = calls.map((c) => ({ role: 'tool', tool_call_id: c.id, content: 'a.txt\nb.txt' }));
  const answer = await post({ model: MODEL, messages: [QUESTION, assistant, ...results], tools: TOOLS });
  return answer.choices[0].message.content;
}

const post = { fetch: postFetch, https: postHttps }[process.argv[2]];
toolLoop(post).then(
  (answer) => {
    console.log(answer);
    process.exitCode = Number(process.env.CLIENT_EXIT || 0);
  },
  (error) => {
    console.error(`${process.argv[2]}: ${error.cause ? error.cause.message : error.message}`);
    process.exitCode = 1;
  },
);
