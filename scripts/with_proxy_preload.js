// Loaded into every Node process scripts/with-proxy starts (NODE_OPTIONS=--require): puts Node's global fetch and
// its http and https modules through the proxy that HTTPS_PROXY names, on the Node versions that ignore proxy
// variables. It fails open: whatever goes wrong here, the client runs as it would without it (with-proxy then says
// if nothing went through the proxy), and it prints nothing, since clients may speak a protocol on their stdio.
'use strict';

(function routeThroughProxy() {
  const proxy = process.env.HTTPS_PROXY || process.env.https_proxy;
  if (!proxy || process.versions.bun) return; // Bun reads the proxy variables itself
  const [major, minor] = process.versions.node.split('.').map(Number);
  try {
    routeFetch();
  } catch (error) {
    debug('fetch', error);
  }
  try {
    if (!nodeProxiesHttpModules(major, minor)) routeHttpModules(new URL(proxy));
  } catch (error) {
    debug('http and https modules', error);
  }
})();

function debug(what, error) {
  if (process.env.WITH_PROXY_DEBUG) process.stderr.write(`with-proxy preload: ${what} not routed: ${error}\n`);
}

// Node's fetch is the undici bundled with Node, which takes its dispatcher from
// globalThis[Symbol.for('undici.globalDispatcher.1')]; the npm undici's setGlobalDispatcher sets that symbol
// (https://github.com/nodejs/undici/blob/v6.x/lib/global.js, and https://github.com/nodejs/node/issues/43187).
// Node 20 and 22 bundle undici 6, whose dispatchers the pinned undici 6 matches. Node 24 bundles undici 7 with
// another handler contract, and reads the proxy variables itself under NODE_USE_ENV_PROXY=1, which with-proxy
// sets (https://nodejs.org/api/cli.html#node_use_env_proxy1).
function routeFetch() {
  const bundled = Number((process.versions.undici || '0').split('.')[0]);
  if (bundled === 0 || bundled > 6) return;
  const path = process.env.WITH_PROXY_UNDICI;
  if (!path) throw new Error('no undici installed (WITH_PROXY_UNDICI is unset)');
  const { EnvHttpProxyAgent, setGlobalDispatcher } = require(path);
  setGlobalDispatcher(quietly(() => new EnvHttpProxyAgent())); // reads HTTP(S)_PROXY and NO_PROXY
}

// undici 6 warns once that EnvHttpProxyAgent is experimental (code UNDICI-EHPA), on the client's stderr, into its
// terminal UI: that one warning is dropped.
function quietly(make) {
  const emitWarning = process.emitWarning;
  process.emitWarning = function (warning, options, ...rest) {
    if (options && options.code === 'UNDICI-EHPA') return;
    return emitWarning.call(process, warning, options, ...rest);
  };
  try {
    return make();
  } finally {
    process.emitWarning = emitWarning;
  }
}

// NODE_USE_ENV_PROXY covers http.request and https.request from Node 24.5 and 22.21 on
// (https://github.com/nodejs/node/pull/58980); earlier, the modules go direct whatever the environment says.
function nodeProxiesHttpModules(major, minor) {
  if (!process.env.NODE_USE_ENV_PROXY) return false;
  return major > 24 || (major === 24 && minor >= 5) || (major === 22 && minor >= 21);
}

// Replaces the modules' global agents (used by every request that names no agent of its own) with agents that
// open each connection as a CONNECT tunnel through the proxy: https then speaks TLS inside the tunnel, http speaks
// plain HTTP, which mitmproxy reads the same way.
function routeHttpModules(proxyUrl) {
  const http = require('http');
  const https = require('https');
  const options = { keepAlive: true, scheduling: 'lifo', timeout: 5000 }; // what Node's own global agents use
  http.globalAgent = new (tunnellingAgent(http.Agent, proxyUrl, false))(options);
  https.globalAgent = new (tunnellingAgent(https.Agent, proxyUrl, true))(options);
}

function tunnellingAgent(Base, proxyUrl, secure) {
  const http = require('http');
  const net = require('net');
  const tls = require('tls');
  return class TunnellingAgent extends Base {
    createConnection(options, callback) {
      const host = options.host || 'localhost';
      const port = options.port || (secure ? 443 : 80);
      if (bypassesProxy(host)) return super.createConnection(options, callback);
      const target = `${net.isIPv6(host) ? `[${host}]` : host}:${port}`;
      const connect = http.request({
        host: proxyUrl.hostname.replace(/^\[|\]$/g, ''),
        port: proxyUrl.port || 80,
        method: 'CONNECT',
        path: target,
        headers: { host: target },
        agent: false,
      });
      connect.once('connect', (response, socket) => {
        if (response.statusCode !== 200) {
          socket.destroy();
          callback(new Error(`the proxy answered ${response.statusCode} to CONNECT ${target}`));
        } else if (!secure) {
          callback(null, socket);
        } else {
          const servername = options.servername || (net.isIP(host) ? undefined : host);
          callback(null, tls.connect({ ...options, socket, servername }));
        }
      });
      connect.once('error', callback);
      connect.end();
      return undefined; // the socket comes through the callback (https://nodejs.org/api/http.html#agentcreateconnectionoptions-callback)
    }
  };
}

// NO_PROXY as curl reads it: "*", or host names matching exactly or as a domain suffix, ports ignored.
function bypassesProxy(host) {
  const entries = (process.env.NO_PROXY || process.env.no_proxy || '')
    .split(',')
    .map((entry) => entry.trim().toLowerCase().replace(/^\[|\]$/g, ''))
    .filter(Boolean);
  const name = host.toLowerCase().replace(/^\[|\]$/g, '');
  return entries.some((entry) => {
    if (entry === '*') return true;
    let bare = entry.replace(/^\*?\./, '');
    if (bare.split(':').length === 2) bare = bare.replace(/:\d+$/, ''); // a port; ::1 and other IPv6 keep theirs
    return name === bare || name.endsWith(`.${bare}`);
  });
}
