// Renders /api/openapi.json as a list of operations, each with a form that
// sends a request: with the signed-in session (the browser sends the
// cookies; writes get the X-CSRF-Token header from the csrf_token cookie,
// as the platform requires) or with a group's API key. Self-hosted and
// free of inline code so that it runs under the platform's
// Content-Security-Policy.
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

// cookie reads a cookie the page may see (csrf_token is not HttpOnly: it
// exists to be echoed in a header).
function cookie(name) {
  for (const part of document.cookie.split(";")) {
    const [k, ...v] = part.trim().split("=");
    if (k === name) return decodeURIComponent(v.join("="));
  }
  return "";
}

let doc = null;

// resolve follows a $ref into components.
function resolve(schema) {
  if (schema && schema.$ref) {
    return doc.components.schemas[schema.$ref.replace("#/components/schemas/", "")] || {};
  }
  return schema || {};
}

// example makes a starting body from a request schema: every required
// property with a placeholder of its type.
function example(schema, depth) {
  schema = resolve(schema);
  if (depth > 4) return null;
  if (schema.enum) return schema.enum[0];
  switch (schema.type) {
    case "object": {
      const out = {};
      const req = schema.required || [];
      for (const [k, v] of Object.entries(schema.properties || {})) {
        if (req.includes(k)) out[k] = example(v, depth + 1);
      }
      return out;
    }
    case "array":
      return [example(schema.items, depth + 1)];
    case "integer":
    case "number":
      return 0;
    case "boolean":
      return false;
    default:
      return "";
  }
}

function schemaName(schema) {
  if (!schema) return "";
  if (schema.$ref) return schema.$ref.replace("#/components/schemas/", "");
  if (schema.anyOf) return schema.anyOf.map(schemaName).join(" | ");
  if (schema.type === "array") return schemaName(schema.items) + "[]";
  if (schema.type === "object" && schema.properties) {
    return "{" + Object.entries(schema.properties).map(([k, v]) => k + ((schema.required || []).includes(k) ? "" : "?") + ": " + schemaName(v)).join(", ") + "}";
  }
  return Array.isArray(schema.type) ? schema.type.join(" | ") : schema.type || "any";
}

function responsesText(op) {
  return Object.keys(op.responses || {}).sort().map((code) => {
    const r = op.responses[code];
    const c = r.content || {};
    const media = Object.keys(c)[0];
    let body = "";
    if (media === "application/json") body = " " + schemaName(c[media].schema);
    else if (media) body = " " + media;
    return code + body;
  }).join("\n");
}

// uid numbers the form controls, whose labels point at them by id.
let uid = 0;

function tryForm(path, method, op) {
  const form = el("form", "try");
  form.setAttribute("aria-label", "Try " + method.toUpperCase() + " " + path);
  const inputs = [];
  for (const p of op.parameters || []) {
    if (p.in === "header") continue; // X-CSRF-Token is added for you
    const l = el("label");
    l.appendChild(el("span", "", p.name + " (" + p.in + (p.required ? ", required" : "") + ")"));
    const i = el("input");
    i.id = "param-" + ++uid;
    l.htmlFor = i.id;
    i.name = p.name;
    i.dataset.in = p.in;
    i.required = !!p.required && p.in === "path";
    if (p.description) i.title = p.description;
    inputs.push(i);
    l.appendChild(i);
    form.appendChild(l);
  }
  let body = null;
  let file = null;
  const content = (op.requestBody && op.requestBody.content) || {};
  if (content["application/json"]) {
    const l = el("label", "", "");
    l.appendChild(el("span", "", "JSON body"));
    body = el("textarea");
    body.id = "body-" + ++uid;
    l.htmlFor = body.id;
    body.name = "body";
    body.spellcheck = false;
    body.value = JSON.stringify(example(content["application/json"].schema, 0), null, 2);
    body.rows = Math.min(12, body.value.split("\n").length + 1);
    form.appendChild(l);
    form.appendChild(body);
  } else if (content["multipart/form-data"]) {
    const l = el("label");
    l.appendChild(el("span", "", "file"));
    file = el("input");
    file.id = "file-" + ++uid;
    l.htmlFor = file.id;
    file.type = "file";
    file.name = "file";
    l.appendChild(file);
    form.appendChild(l);
  }
  const send = el("button", "btn btn-primary btn-small", "Send " + method.toUpperCase());
  send.type = "submit";
  form.appendChild(send);
  const out = el("pre", "result wrap");
  out.setAttribute("aria-live", "polite");
  form.appendChild(out);
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    let url = path;
    const query = new URLSearchParams();
    for (const i of inputs) {
      if (i.dataset.in === "path") url = url.replace("{" + i.name + "}", encodeURIComponent(i.value));
      else if (i.value !== "") query.set(i.name, i.value);
    }
    if ([...query].length) url += "?" + query;
    const headers = {};
    const key = document.getElementById("apikey").value.trim();
    const init = { method: method.toUpperCase(), headers, credentials: "same-origin", redirect: "manual" };
    if (key) {
      headers["X-API-Key"] = key;
      init.credentials = "omit";
    } else if (init.method !== "GET") {
      headers["X-CSRF-Token"] = cookie("csrf_token");
    }
    if (body) {
      headers["Content-Type"] = "application/json";
      init.body = body.value;
    } else if (file && file.files.length) {
      const fd = new FormData();
      fd.append("file", file.files[0]);
      init.body = fd;
    }
    out.textContent = "…";
    fetch(url, init).then(async (r) => {
      let text = r.type === "opaqueredirect" ? "(a redirect: open " + url + " in the browser to follow it)" : await r.text();
      try { text = JSON.stringify(JSON.parse(text), null, 2); } catch (err) { /* not JSON */ }
      out.textContent = init.method + " " + url + "\n" + (r.status || "") + " " + r.statusText + "\n\n" + text;
      out.dataset.status = String(r.status);
      if (url.startsWith("/api/auth/")) whoami();
    }, (err) => { out.textContent = String(err); });
  });
  return form;
}

function render(d) {
  doc = d;
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
    // A section per tag, so that filtering hides a heading whose
    // operations are all hidden.
    const section = el("section", "tag");
    const h = el("h2", "", tag);
    h.id = "tag-" + tag.replace(/[^a-z0-9]+/gi, "-");
    section.setAttribute("aria-labelledby", h.id);
    section.appendChild(h);
    main.appendChild(section);
    for (const { path, method, op } of ops) {
      const d = el("details", "op");
      d.id = op.operationId;
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
      for (const p of op.parameters || []) row(p.in + " parameter", p.name + (p.required ? " (required)" : "") + (p.description ? ": " + p.description : ""));
      if (op.requestBody) {
        const [media, c] = Object.entries(op.requestBody.content)[0];
        row("request body", media + (media === "application/json" ? " " + schemaName(c.schema) : "") + (op.requestBody.required ? "" : " (optional)"));
      }
      row("responses", responsesText(op));
      d.appendChild(t);
      d.appendChild(tryForm(path, method, op));
      section.appendChild(d);
    }
  }
  const section = el("section", "tag");
  const h = el("h2", "", "schemas");
  h.id = "tag-schemas";
  section.setAttribute("aria-labelledby", h.id);
  const schemas = el("details", "op");
  schemas.dataset.search = "schemas " + Object.keys(doc.components.schemas).join(" ").toLowerCase();
  schemas.appendChild(el("summary", "", "Schemas"));
  // Taller than the window: focusable so that the keyboard scrolls it.
  const pre = el("pre", "", JSON.stringify(doc.components.schemas, null, 2));
  pre.tabIndex = 0;
  pre.setAttribute("role", "region");
  pre.setAttribute("aria-label", "Schemas (JSON)");
  schemas.appendChild(pre);
  section.appendChild(h);
  section.appendChild(schemas);
  main.appendChild(section);
}

// whoami shows who the requests go as.
function whoami() {
  const who = document.getElementById("who");
  if (!cookie("csrf_token")) {
    // No session cookie pair: asking /me would only log a 401.
    who.textContent = "Not signed in: requests go without a session (sign in above, then come back to this page), or enter an API key.";
    return;
  }
  fetch("/api/auth/me", { credentials: "same-origin" }).then(async (r) => {
    if (r.ok) {
      const me = await r.json();
      who.textContent = "Signed in as " + (me.preferred_username || me.sub) + (me.isSystemAdmin ? " (system admin)" : "") +
        "; groups: " + (me.groups.map((g) => g.name + " (" + g.role + ")").join(", ") || "none") + ". Requests below go with this session.";
    } else {
      who.textContent = "Not signed in: requests go without a session (sign in above, then come back to this page), or enter an API key.";
    }
  }, () => { who.textContent = ""; });
}

function filter() {
  const q = document.getElementById("filter").value.toLowerCase();
  let shown = 0;
  for (const d of document.querySelectorAll("details.op")) {
    const hide = q !== "" && d.dataset.search !== undefined && !d.dataset.search.includes(q);
    d.classList.toggle("hidden", hide);
    if (!hide && d.id) shown++;
  }
  for (const s of document.querySelectorAll("section.tag")) {
    s.classList.toggle("hidden", !s.querySelector("details.op:not(.hidden)"));
  }
  document.getElementById("filter-count").textContent = q === "" ? "" : shown + (shown === 1 ? " operation matches." : " operations match.");
}

document.getElementById("filter").addEventListener("input", filter);
whoami();
fetch("/api/openapi.json", { credentials: "same-origin" })
  .then((r) => { if (!r.ok) throw new Error("HTTP " + r.status); return r.json(); })
  .then(render)
  .catch((e) => { document.getElementById("status").textContent = "Could not load the API description: " + e.message; });
