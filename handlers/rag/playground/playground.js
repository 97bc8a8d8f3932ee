"use strict";
// The rag playground: uploads with progress, the document list, streamed answers with their
// sources, search. Every request goes to this page's own server (under the API base the page
// names in <body data-api>); everything shown from the server is set as text, never as HTML
// (the page's policy requires Trusted Types, so an HTML sink would be refused anyway).
(function () {
  const API = document.body.dataset.api || "";
  const LARGE_FILE_BYTES = 8 * 1024 * 1024; // auto mode: larger files go to an ingestion job
  const JOB_POLL_MS = 1000;
  const HEALTH_POLL_MS = 2000;
  const MAX_ROWS = 1000; // documents shown at most
  const MAX_SHOWN_CHARS = 2000; // of one result's text
  const MAX_STREAM_BUFFER = 1024 * 1024; // an SSE frame larger than this ends the answer
  const DEFAULT_COLLECTION = "default";

  const $ = (id) => document.getElementById(id);

  function el(tag, className, text) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }

  function setStatus(node, state, text) {
    node.dataset.state = state;
    node.textContent = text;
  }

  // -- the collection and the API key ----------------------------------------------------------

  // The collection to send, or null for the default one: the field is left out then, so the
  // page works with servers that do not know collections.
  function collection() {
    const value = $("collection").value.trim();
    return value === "" || value === DEFAULT_COLLECTION ? null : value;
  }

  function headers(extra) {
    const result = Object.assign({}, extra || {});
    const key = $("api-key").value.trim();
    if (key) result["Authorization"] = "Bearer " + key;
    return result;
  }

  function withCollection(body) {
    const name = collection();
    if (name !== null) body.collection = name;
    return body;
  }

  // -- errors ----------------------------------------------------------------------------------

  // A readable message from an error response: FastAPI-style {"detail": "..."} or
  // {"detail": [{"loc": [...], "msg": "..."}]}, else the status line.
  function describeError(status, text) {
    let detail = null;
    try {
      detail = JSON.parse(text).detail;
    } catch (_) {
      detail = null;
    }
    if (typeof detail === "string") return "HTTP " + status + ": " + detail;
    if (Array.isArray(detail)) {
      const parts = detail.slice(0, 5).map(function (item) {
        const where = Array.isArray(item.loc) ? item.loc.join(".") + ": " : "";
        return where + String(item.msg);
      });
      return "HTTP " + status + ": " + parts.join("; ");
    }
    return "HTTP " + status;
  }

  async function requestJson(method, path, body) {
    const init = { method: method, headers: headers({ Accept: "application/json" }) };
    if (body !== undefined) {
      init.headers["Content-Type"] = "application/json";
      init.body = JSON.stringify(body);
    }
    const response = await fetch(API + path, init);
    const text = await response.text();
    if (!response.ok) throw new Error(describeError(response.status, text));
    return text ? JSON.parse(text) : null;
  }

  // -- health ----------------------------------------------------------------------------------

  async function checkHealth() {
    const node = $("health");
    try {
      const response = await fetch(API + "/health", { headers: headers() });
      const body = await response.json();
      if (response.ok && body.status === "ready") {
        setStatus(node, "ready", "ready");
        return;
      }
      const waiting = Object.keys(body.components || {}).filter(function (name) {
        return body.components[name] !== "ready";
      });
      setStatus(node, String(body.status), String(body.status) + ": " + waiting.join(", "));
    } catch (_) {
      setStatus(node, "unreachable", "cannot reach the server");
    }
    setTimeout(checkHealth, HEALTH_POLL_MS);
  }

  // -- uploads ---------------------------------------------------------------------------------

  function uploadRow(file) {
    const row = el("li", "upload");
    row.appendChild(el("span", "name", file.name));
    const bar = el("progress");
    bar.max = 100;
    bar.value = 0;
    row.appendChild(bar);
    const percent = el("span", "percent", "0 %");
    row.appendChild(percent);
    const status = el("span", "upload-status", "waiting");
    row.appendChild(status);
    row.dataset.state = "waiting";
    $("uploads").prepend(row);
    return {
      progress: function (fraction) {
        const value = Math.max(0, Math.min(100, Math.round(fraction * 100)));
        bar.value = value;
        percent.textContent = value + " %";
      },
      state: function (state, text) {
        row.dataset.state = state;
        status.textContent = text;
      },
    };
  }

  // POSTs a form with XHR (fetch cannot report upload progress); resolves to {status, text}.
  function postForm(path, form, onProgress) {
    return new Promise(function (resolve, reject) {
      const xhr = new XMLHttpRequest();
      xhr.open("POST", API + path);
      const extra = headers({ Accept: "application/json" });
      Object.keys(extra).forEach(function (name) {
        xhr.setRequestHeader(name, extra[name]);
      });
      xhr.upload.onprogress = function (event) {
        if (event.lengthComputable && event.total > 0) onProgress(event.loaded / event.total);
      };
      xhr.upload.onload = function () {
        onProgress(1);
      };
      xhr.onload = function () {
        resolve({ status: xhr.status, text: xhr.responseText });
      };
      xhr.onerror = function () {
        reject(new Error("the upload failed (network error)"));
      };
      xhr.onabort = function () {
        reject(new Error("the upload was aborted"));
      };
      xhr.send(form);
    });
  }

  function formFor(part, file) {
    const form = new FormData();
    form.append(part, file, file.name);
    const name = collection();
    if (name !== null) form.append("collection", name);
    return form;
  }

  async function uploadDocument(file, row) {
    row.state("sending", "sending");
    const answer = await postForm("/uploadDocument", formFor("file", file), function (f) {
      row.progress(f);
      if (f >= 1) row.state("processing", "extracting and embedding…");
    });
    if (answer.status !== 200) throw new Error(describeError(answer.status, answer.text));
    const result = JSON.parse(answer.text);
    row.progress(1);
    row.state("stored", "stored · " + result.chunks + " chunks");
  }

  function sleep(ms) {
    return new Promise(function (resolve) {
      setTimeout(resolve, ms);
    });
  }

  async function ingestionJob(file, row) {
    row.state("sending", "sending");
    const answer = await postForm("/ingestionJobs", formFor("file1", file), row.progress);
    if (answer.status !== 202) throw new Error(describeError(answer.status, answer.text));
    let job = JSON.parse(answer.text);
    const path = "/ingestionJobs/" + encodeURIComponent(job.job_id);
    row.progress(0);
    for (;;) {
      const item = (job.files || [])[0] || {};
      if (job.state === "succeeded") {
        row.progress(1);
        row.state("stored", "stored · " + item.chunks_done + " chunks");
        return;
      }
      if (job.state === "failed" || job.state === "partly_failed") {
        throw new Error(item.error || job.error || "the job failed");
      }
      if (job.chunks_total) {
        row.progress(job.chunks_done / job.chunks_total);
        row.state("processing", "embedding " + job.chunks_done + " of " + job.chunks_total);
      } else {
        row.state("processing", job.state === "queued" ? "queued" : "extracting…");
      }
      await sleep(JOB_POLL_MS);
      job = await requestJson("GET", path);
    }
  }

  async function onUpload(event) {
    event.preventDefault();
    const input = $("files");
    const files = Array.from(input.files || []);
    if (files.length === 0) return;
    const mode = $("ingest-mode").value;
    const button = $("upload-button");
    button.disabled = true;
    input.value = "";
    try {
      for (const file of files) {
        const row = uploadRow(file);
        const job = mode === "job" || (mode === "auto" && file.size > LARGE_FILE_BYTES);
        try {
          await (job ? ingestionJob(file, row) : uploadDocument(file, row));
        } catch (error) {
          row.state("failed", String(error.message || error));
        }
        await loadDocuments();
      }
    } finally {
      button.disabled = false;
    }
  }

  // -- documents -------------------------------------------------------------------------------

  async function loadDocuments() {
    const status = $("documents-status");
    const name = collection();
    const query = name === null ? "" : "?collection=" + encodeURIComponent(name);
    let documents;
    try {
      documents = await requestJson("GET", "/documents" + query);
    } catch (error) {
      setStatus(status, "error", String(error.message || error));
      return;
    }
    const body = $("documents").tBodies[0];
    const rows = documents.slice(0, MAX_ROWS).map(documentRow);
    body.replaceChildren.apply(body, rows);
    const shown = documents.length > MAX_ROWS ? " (showing the newest " + MAX_ROWS + ")" : "";
    const count = documents.length === 1 ? "1 document" : documents.length + " documents";
    setStatus(status, "ready", count + shown);
  }

  function documentRow(document_) {
    const row = el("tr");
    row.dataset.documentId = String(document_.document_id);
    row.appendChild(el("td", "filename", document_.filename));
    row.appendChild(el("td", "number", document_.chunks));
    row.appendChild(el("td", "date", document_.uploaded_at));
    row.appendChild(el("td", "id", document_.document_id));
    const cell = el("td");
    const button = el("button", "delete", "Delete");
    button.type = "button";
    let armed = null;
    button.addEventListener("click", async function () {
      if (armed === null) { // first click: ask for a second one
        button.textContent = "Confirm delete";
        button.classList.add("armed");
        armed = setTimeout(function () {
          armed = null;
          button.textContent = "Delete";
          button.classList.remove("armed");
        }, 4000);
        return;
      }
      clearTimeout(armed);
      button.disabled = true;
      const path = "/documents/" + encodeURIComponent(document_.document_id);
      try {
        await requestJson("DELETE", path);
      } catch (error) {
        setStatus($("documents-status"), "error", String(error.message || error));
      }
      await loadDocuments();
    });
    cell.appendChild(button);
    row.appendChild(cell);
    return row;
  }

  // -- results (search and sources) ------------------------------------------------------------

  function shorten(text) {
    const value = String(text);
    return value.length > MAX_SHOWN_CHARS ? value.slice(0, MAX_SHOWN_CHARS) + "…" : value;
  }

  function resultItem(result) {
    const item = el("li", "result");
    const head = el("div", "result-head");
    head.appendChild(el("strong", "source", result.source));
    const where = [];
    if (result.page !== null && result.page !== undefined) where.push("page " + result.page);
    where.push("chunk " + result.chunk);
    if (typeof result.score === "number") where.push("score " + result.score.toFixed(3));
    head.appendChild(el("span", "meta", where.join(" · ")));
    item.appendChild(head);
    item.appendChild(el("p", "content", shorten(result.content)));
    return item;
  }

  function showResults(list, results) {
    list.replaceChildren.apply(list, results.map(resultItem));
  }

  // -- asking ----------------------------------------------------------------------------------

  let asking = null; // the AbortController of the answer being streamed

  // Reads a Server-Sent Events body, calling onEvent(event, data) for each frame.
  async function readEvents(response, onEvent) {
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += decoder.decode(value, { stream: true });
      let end;
      while ((end = buffer.indexOf("\n\n")) >= 0) {
        const frame = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        let event = "message";
        const data = [];
        frame.split("\n").forEach(function (line) {
          if (line.startsWith("event:")) event = line.slice(6).trim();
          else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""));
        });
        if (data.length > 0) onEvent(event, data.join("\n"));
      }
      if (buffer.length > MAX_STREAM_BUFFER) throw new Error("an event frame was too large");
    }
  }

  // Reads a plain text body (a server that does not send events), calling onText per piece.
  async function readText(response, onText) {
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      onText(decoder.decode(value, { stream: true }));
    }
  }

  async function onAsk(event) {
    event.preventDefault();
    const question = $("question").value.trim();
    if (!question) return;
    const status = $("answer-status");
    const answer = $("answer");
    const sources = $("sources");
    const text = document.createTextNode("");
    answer.replaceChildren(text);
    sources.replaceChildren();
    const tokens = parseInt($("num-tokens").value, 10);
    const body = withCollection({
      question: question,
      context: "",
      use_knowledge_base: $("use-knowledge-base").checked,
      num_tokens: Number.isFinite(tokens) ? Math.max(1, Math.min(1024, tokens)) : 256,
    });
    const controller = new AbortController();
    asking = controller;
    $("ask-button").disabled = true;
    $("stop-button").disabled = false;
    setStatus(status, "waiting", "waiting for the answer…");
    let finished = false;
    try {
      const response = await fetch(API + "/generate", {
        method: "POST",
        headers: headers({ "Content-Type": "application/json", Accept: "text/event-stream" }),
        body: JSON.stringify(body),
        signal: controller.signal,
      });
      if (!response.ok) {
        throw new Error(describeError(response.status, await response.text()));
      }
      setStatus(status, "streaming", "answering…");
      const type = response.headers.get("Content-Type") || "";
      if (type.startsWith("text/event-stream")) {
        await readEvents(response, function (name, data) {
          const payload = JSON.parse(data);
          if (name === "done") {
            finished = true;
            const found = Array.isArray(payload.sources) ? payload.sources : [];
            showResults(sources, found);
            const reason = payload.finish_reason === "length" ? " (token limit reached)" : "";
            setStatus(status, "done", "done" + reason + " · " + found.length + " sources");
          } else if (typeof payload.delta === "string") {
            text.appendData(payload.delta);
          }
        });
      } else {
        await readText(response, function (piece) {
          text.appendData(piece);
        });
        finished = true;
        setStatus(status, "done", "done");
      }
      if (!finished) setStatus(status, "error", "the answer ended early (a server error)");
    } catch (error) {
      if (controller.signal.aborted) setStatus(status, "stopped", "stopped");
      else setStatus(status, "error", String(error.message || error));
    } finally {
      asking = null;
      $("ask-button").disabled = false;
      $("stop-button").disabled = true;
    }
  }

  function onStop() {
    if (asking !== null) asking.abort();
  }

  // -- search ----------------------------------------------------------------------------------

  async function onSearch(event) {
    event.preventDefault();
    const content = $("search-text").value.trim();
    if (!content) return;
    const status = $("search-status");
    const count = parseInt($("num-docs").value, 10);
    const body = withCollection({
      content: content,
      num_docs: Number.isFinite(count) ? Math.max(1, Math.min(100, count)) : 4,
    });
    setStatus(status, "waiting", "searching…");
    try {
      const results = await requestJson("POST", "/documentSearch", body);
      showResults($("search-results"), results);
      setStatus(status, "done", results.length === 1 ? "1 result" : results.length + " results");
    } catch (error) {
      setStatus(status, "error", String(error.message || error));
    }
  }

  // -- start -----------------------------------------------------------------------------------

  $("upload-form").addEventListener("submit", onUpload);
  $("ask-form").addEventListener("submit", onAsk);
  $("stop-button").addEventListener("click", onStop);
  $("search-form").addEventListener("submit", onSearch);
  $("refresh-documents").addEventListener("click", loadDocuments);
  $("collection").addEventListener("change", loadDocuments);
  checkHealth();
  loadDocuments();
})();
