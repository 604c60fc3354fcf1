(function () {
  "use strict";
  var island = document.getElementById("torchscan-data");
  var data = JSON.parse(island.textContent);
  var nodes = data.maps.nodes;
  var layers = data.report.layers;
  function grouped(n) { return String(n).replace(/\B(?=(\d{3})+(?!\d))/g, ","); }
  function valueText(m) {
    if (!m) { return "not recorded"; }
    if (m.status === "complete") { return "complete \u00b7 " + grouped(m.value) + " " + m.unit; }
    if (m.status === "partial") { return "partial \u00b7 at least " + grouped(m.known_value) + " " + m.unit + " (lower bound; full value unknown)"; }
    return "unavailable \u00b7 unknown";
  }

  function text(tag, value, cls) {
    var el = document.createElement(tag);
    el.textContent = value;
    if (cls) { el.className = cls; }
    return el;
  }
  function shape(meta) {
    if (!meta) { return "none"; }
    if (Array.isArray(meta)) { return meta.map(shape).join(", "); }
    if (meta.kind === "tensor" && Array.isArray(meta.shape)) { return "(" + meta.shape.join(", ") + ") " + (meta.dtype || ""); }
    if (Array.isArray(meta.args)) { return meta.args.map(shape).join(", ") + (Object.keys(meta.kwargs || {}).length ? ", " + Object.keys(meta.kwargs).map(function (k) { return k + "=" + shape(meta.kwargs[k]); }).join(", ") : ""); }
    return meta.kind || "value";
  }
  function tilesOf(map) { return Array.prototype.slice.call(map.querySelectorAll("a.tile")); }
  function tileFor(map, node) { return map.querySelector('a.tile[data-node="' + node + '"]'); }
  function mapOf(el) { return el.closest(".cost-map"); }
  function inspect(tile) {
    var map = mapOf(tile);
    var panel = map.closest(".metric-panel");
    var body = panel.querySelector(".inspector-body");
    var n = Number(tile.getAttribute("data-node"));
    var node = nodes[n];
    var view = panel.getAttribute("data-metric");
    var calls = node[3];
    var beforeCalls = node[4];
    body.textContent = "";
    body.appendChild(text("p", node[0] === "" ? "(model root)" : node[0], "insp-path"));
    body.appendChild(text("p", "Type: " + (node[2] || "unknown") + " \u00b7 " + calls.length + (calls.length === 1 ? " call" : " calls")));
    body.appendChild(text("p", "Subtotal: " + tile.getAttribute("data-subtotal")));
    body.appendChild(text("p", map.getAttribute("data-key")));
    if (calls.length) {
      body.appendChild(text("p", "Input: " + shape(layers[calls[0]].input), "shape-box"));
      body.appendChild(text("p", "Output: " + shape(layers[calls[0]].output), "shape-box"));
    }
    if (!calls.length && beforeCalls.length) {
      var gone = text("a", "Called in the before report only");
      gone.href = "#before-call-" + beforeCalls[0];
      body.appendChild(gone);
    }
    calls.slice(0, 20).forEach(function (i) {
      var row = layers[i];
      var card = document.createElement("div");
      var p = row.parameters || {};
      var fresh = (p.trainable || 0) + (p.frozen || 0);
      var m = (row.metrics || {})[view];
      card.className = "call-card";
      card.appendChild(text("p", "Call #" + row.call_index));
      card.appendChild(text("p", fresh ? fresh + " newly attributed parameters" : (p.shared ? "Shared tensors \u00b7 no new parameter attribution" : "No parameters attributed")));
      if (m) { card.appendChild(text("p", valueText(m))); }
      var a = text("a", "Exact values");
      a.href = "#call-" + i;
      card.appendChild(a);
      body.appendChild(card);
    });
    if (data.before) { body.appendChild(text("p", tile.getAttribute("data-before") || "Not in the before report")); }
    data.diagnostics.filter(function (d) { return typeof d.path === "string" && d.path === node[0]; }).forEach(function (d) {
      body.appendChild(text("p", d.severity + " \u00b7 " + d.code + (d.metric ? " [" + d.metric + "]" : "") + " " + (d.message || ""), "diag"));
    });
    data.suggestions.filter(function (s) { return s.path === node[0] && s.href.indexOf("#call-") === 0; }).slice(0, 1).forEach(function (s) {
      body.appendChild(text("p", "Suggestion: " + s.experiment));
    });
  }
  function select(tile) {
    var map = mapOf(tile);
    tilesOf(map).forEach(function (t) { t.classList.remove("selected"); t.removeAttribute("aria-current"); });
    tile.classList.add("selected");
    tile.setAttribute("aria-current", "true");
    map.selectedTile = tile;
    map.querySelectorAll(".toolbar button").forEach(function (b) { b.disabled = false; });
    inspect(tile);
  }
  function layout(map, x0, w0) {
    var scale = 960 / w0;
    tilesOf(map).forEach(function (t) {
      var rects = t.querySelectorAll("rect");
      var label = t.querySelector("text");
      rects.forEach(function (r) {
        if (!r.hasAttribute("data-x")) { r.setAttribute("data-x", r.getAttribute("x")); r.setAttribute("data-w", r.getAttribute("width")); }
        var x = (Number(r.getAttribute("data-x")) - x0) * scale;
        var w = Number(r.getAttribute("data-w")) * scale;
        r.setAttribute("x", x.toFixed(2));
        r.setAttribute("width", Math.max(w, 0).toFixed(2));
      });
      if (label) {
        var first = rects[0];
        label.setAttribute("x", (Number(first.getAttribute("x")) + 4).toFixed(2));
        label.style.display = Number(first.getAttribute("width")) > 48 ? "" : "none";
      }
    });
  }
  function under(path, root) { return root === "" ? path !== "" : path.indexOf(root + ".") === 0; }
  function act(map, what) {
    if (what === "reset") {
      layout(map, 0, 960);
      tilesOf(map).forEach(function (t) { t.classList.remove("selected", "collapsed", "collapsing"); t.removeAttribute("aria-current"); });
      map.querySelectorAll(".toolbar button").forEach(function (b) { b.disabled = true; });
      map.selectedTile = null;
      return;
    }
    var selected = map.selectedTile;
    if (!selected) { return; }
    var node = nodes[Number(selected.getAttribute("data-node"))];
    if (what === "parent") {
      var up = node[1] === null ? null : tileFor(map, node[1]);
      if (up) { select(up); up.focus(); }
    } else if (what === "collapse") {
      var hide = !selected.classList.contains("collapsing");
      selected.classList.toggle("collapsing", hide);
      tilesOf(map).forEach(function (t) {
        if (under(nodes[Number(t.getAttribute("data-node"))][0], node[0])) { t.classList.toggle("collapsed", hide); }
      });
    } else if (what === "zoom") {
      var r = selected.querySelector("rect");
      layout(map, Number(r.getAttribute("data-x") || r.getAttribute("x")), Number(r.getAttribute("data-w") || r.getAttribute("width")));
    }
  }
  function neighbour(tile, key) {
    var map = mapOf(tile);
    var n = Number(tile.getAttribute("data-node"));
    var node = nodes[n];
    var candidates = tilesOf(map).filter(function (t) { return !t.classList.contains("collapsed"); });
    var ids = candidates.map(function (t) { return Number(t.getAttribute("data-node")); });
    if (key === "ArrowUp") { return node[1] === null ? null : tileFor(map, node[1]); }
    if (key === "ArrowDown") {
      for (var i = 0; i < ids.length; i++) { if (nodes[ids[i]][1] === n) { return candidates[i]; } }
      return null;
    }
    var siblings = candidates.filter(function (t, i) { return nodes[ids[i]][1] === node[1]; });
    var at = siblings.indexOf(tile);
    return siblings[at + (key === "ArrowRight" ? 1 : -1)] || null;
  }
  document.querySelectorAll(".cost-map").forEach(function (map) {
    map.addEventListener("click", function (e) {
      var tile = e.target.closest("a.tile");
      if (tile) { e.preventDefault(); select(tile); }
      var button = e.target.closest("button[data-act]");
      if (button) { act(map, button.getAttribute("data-act")); }
    });
    map.addEventListener("keydown", function (e) {
      var tile = e.target.closest("a.tile");
      if (!tile) { return; }
      if (e.key === "Enter" || e.key === " ") { e.preventDefault(); select(tile); return; }
      if (["ArrowUp", "ArrowDown", "ArrowLeft", "ArrowRight"].indexOf(e.key) >= 0) {
        var next = neighbour(tile, e.key);
        e.preventDefault();
        if (next) { next.focus(); }
      }
    });
  });
  var search = document.getElementById("module-search");
  if (search) {
    search.parentNode.hidden = false;
    search.addEventListener("input", function () {
      var q = search.value.trim().toLowerCase();
      var count = 0;
      document.querySelectorAll("a.tile").forEach(function (t) {
        var hit = q !== "" && nodes[Number(t.getAttribute("data-node"))][0].toLowerCase().indexOf(q) >= 0;
        t.classList.toggle("match", hit);
        t.classList.toggle("dim", q !== "" && !hit);
        if (hit && t.getClientRects().length > 0) { count++; }  /* in the view shown */
      });
      document.getElementById("module-search-count").textContent = q === "" ? "" : count + " matching tiles";
    });
  }
})();
