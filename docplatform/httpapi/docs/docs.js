// Renders /api/openapi.json as a list of operations. Self-hosted and free
// of inline code so that it runs under the platform's Content-Security-Policy.
"use strict";

function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}

function accessText(op) {
  let t = op["x-access-level"] || "undeclared";
  if (t === "group") {
    t += " (" + (op["x-min-role"] || "MEMBER") + ", " + op["x-group-field"] + " from " + op["x-group-from"] + ")";
  }
  return t;
}

function securityText(op) {
  const names = (op.security || []).flatMap((s) => Object.keys(s));
  return names.length ? names.join(" or ") : "none";
}

function render(doc) {
  document.getElementById("title").textContent = doc.info.title + " " + doc.info.version;
  document.getElementById("description").textContent = doc.info.description || "";
  const main = document.getElementById("operations");
  main.textContent = "";
  const byTag = new Map();
  for (const path of Object.keys(doc.paths).sort()) {
    for (const [method, op] of Object.entries(doc.paths[path])) {
      const tag = (op.tags && op.tags[0]) || "other";
      if (!byTag.has(tag)) byTag.set(tag, []);
      byTag.get(tag).push({ path, method, op });
    }
  }
  for (const [tag, ops] of byTag) {
    main.appendChild(el("h2", "", tag));
    for (const { path, method, op } of ops) {
      const d = el("details", "op");
      d.dataset.search = (method + " " + path + " " + op.summary + " " + accessText(op)).toLowerCase();
      const s = el("summary");
      s.appendChild(el("span", "method m-" + method, method.toUpperCase()));
      s.appendChild(el("span", "path", path));
      s.appendChild(el("span", "summary", op.summary || ""));
      s.appendChild(el("span", "access access-" + (op["x-access-level"] || "").replace(/ /g, "-"), accessText(op)));
      d.appendChild(s);
      const t = el("table");
      const row = (k, v) => { const tr = el("tr"); tr.appendChild(el("th", "", k)); tr.appendChild(el("td", "", v)); t.appendChild(tr); };
      row("operationId", op.operationId);
      row("access level", accessText(op));
      row("security", securityText(op));
      for (const p of op.parameters || []) row(p.in + " parameter", p.name + (p.required ? " (required)" : ""));
      if (op.requestBody) row("request body", Object.keys(op.requestBody.content).join(", "));
      row("responses", Object.keys(op.responses || {}).sort().join(", "));
      d.appendChild(t);
      main.appendChild(d);
    }
  }
}

function filter() {
  const q = document.getElementById("filter").value.toLowerCase();
  for (const d of document.querySelectorAll("details.op")) {
    d.classList.toggle("hidden", q !== "" && !d.dataset.search.includes(q));
  }
}

document.getElementById("filter").addEventListener("input", filter);
fetch("/api/openapi.json", { credentials: "same-origin" })
  .then((r) => { if (!r.ok) throw new Error("HTTP " + r.status); return r.json(); })
  .then(render)
  .catch((e) => { document.getElementById("status").textContent = "Could not load the API description: " + e.message; });
