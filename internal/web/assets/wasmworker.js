// The static copy's API in a Web Worker: knee's handlers compiled to
// WebAssembly (cmd/knee-wasm) run here, off the page's thread, so a
// simulation or a sweep never freezes the page (Learn's first load held it
// 5.2 s when the module ran beside the page). The page posts
// {id, method, path, body, stream}; the answer comes back as {id, status,
// body}, after {id, status, chunk} messages for a streamed one.
importScripts('wasm_exec.js');

let ready;
function load() {
  ready ??= (async () => {
    const res = await fetch('knee.wasm.gz');
    if (!res.ok) throw new Error('loading the simulator (static/knee.wasm.gz): ' + res.status);
    let bytes = new Uint8Array(await res.arrayBuffer());
    // A server that already undid the gzip (Content-Encoding) hands the
    // module itself over.
    if (bytes[0] === 0x1f && bytes[1] === 0x8b) {
      bytes = await new Response(new Blob([bytes]).stream().pipeThrough(new DecompressionStream('gzip'))).arrayBuffer();
    }
    const go = new Go();
    const {instance} = await WebAssembly.instantiate(bytes, go.importObject);
    const started = new Promise(resolve => self.addEventListener('knee-wasm-ready', resolve, {once: true}));
    go.run(instance);
    await started;
  })();
  return ready;
}

self.onmessage = async e => {
  const {id, method, path, body, stream} = e.data;
  try {
    await load();
    // A streamed answer (a sweep's steps) goes to the page a piece at a
    // time, as the handler flushes it.
    const r = await self.kneeAPI(method, path, body, stream ? (status, chunk) => self.postMessage({id, status, chunk}) : undefined);
    self.postMessage({id, status: r.status, body: r.body});
  } catch (err) {
    self.postMessage({id, status: 500, body: JSON.stringify({error: String((err && err.message) || err)})});
  }
};
