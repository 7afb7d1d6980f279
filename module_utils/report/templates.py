# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The Jinja2 templates of the diagnosis page and the board, as data.

Kept in a .py file because the collection's module_utils ship only Python files (the build
copies module_utils/<package>/*.py). No template loads anything from the network: the style and
the script are inline or served by the board itself, the picture is HTML/CSS.
"""

STYLE = r"""
:root { --ok: #1f7a3a; --ok-bg: #e6f4ea; --broken: #b3261e; --broken-bg: #fde7e6;
        --unknown: #8a5a00; --unknown-bg: #fff4d6; --skipped: #5f6368; --skipped-bg: #f1f3f4;
        --ink: #1d1d1f; --muted: #5f6368; --line: #d0d4d9; }
* { box-sizing: border-box; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "Noto Sans", sans-serif;
       color: var(--ink); margin: 0; padding: 16px 24px; background: #fff; }
h1 { font-size: 20px; margin: 0 0 4px; }
h2 { font-size: 16px; margin: 20px 0 8px; border-bottom: 1px solid var(--line); padding-bottom: 4px; }
code, .mono { font-family: ui-monospace, "DejaVu Sans Mono", Menlo, Consolas, monospace; font-size: 12px; }
a { color: #0b57d0; }
.summary { margin: 4px 0 12px; color: var(--muted); }
.summary b { color: var(--ink); }
.verdict-line { font-size: 15px; margin: 8px 0 12px; }
.path { list-style: none; margin: 0; padding: 0; max-width: 980px; }
.path > li { margin: 0; }
.layer { border: 2px solid var(--line); border-radius: 8px; padding: 8px 12px; margin: 0;
         page-break-inside: avoid; break-inside: avoid; position: relative; }
.layer + .arrow, .arrow { text-align: center; color: var(--muted); line-height: 1; margin: 2px 0;
                          font-size: 16px; }
.layer .head { display: flex; flex-wrap: wrap; align-items: baseline; gap: 8px; }
.layer .title { font-weight: 600; font-size: 15px; }
.layer .layer-id { color: var(--muted); }
.layer .role { color: var(--muted); margin: 2px 0 0; }
.badge { display: inline-block; border-radius: 10px; padding: 0 8px; font-size: 12px; font-weight: 700;
         letter-spacing: .04em; border: 1px solid currentColor; }
.status-ok { border-color: var(--ok); background: var(--ok-bg); }
.status-ok .badge { color: var(--ok); }
.status-broken { border-color: var(--broken); background: var(--broken-bg); }
.status-broken .badge { color: var(--broken); }
.status-unknown { border-color: var(--unknown); background: var(--unknown-bg); }
.status-unknown .badge { color: var(--unknown); }
.status-skipped { border-color: var(--skipped); border-style: dashed; background: var(--skipped-bg); }
.status-skipped .badge { color: var(--skipped); }
.first-broken { border-width: 4px; box-shadow: 0 0 0 3px rgba(179, 38, 30, .25); }
.first-mark { background: var(--broken); color: #fff; border-radius: 4px; padding: 0 6px;
              font-size: 12px; font-weight: 700; }
.reason { margin: 4px 0 0; }
.next { margin: 4px 0 0; }
.evidence { margin: 6px 0 0; padding-left: 18px; }
.evidence li { margin: 2px 0; word-break: break-word; }
.evidence .src { color: var(--muted); }
.evidence .val { white-space: pre-wrap; }
.node-frame { border: 2px solid #3c4043; border-radius: 10px; padding: 22px 10px 10px; margin: 0;
              position: relative; }
.node-frame > .frame-title { position: absolute; top: -11px; left: 12px; background: #fff;
                             padding: 0 6px; font-weight: 700; }
.node-frame .arrow { margin: 2px 0; }
table { border-collapse: collapse; margin: 4px 0 8px; }
th, td { border: 1px solid var(--line); padding: 4px 8px; text-align: left; vertical-align: top; }
th { background: #f6f8fa; }
td.state-PASS, td.PASS { background: var(--ok-bg); color: var(--ok); font-weight: 700; }
td.state-FAIL, td.FAIL { background: var(--broken-bg); color: var(--broken); font-weight: 700; }
td.state-not-graded { color: var(--muted); }
tr.host-unreachable td, tr.host-failed td { background: var(--unknown-bg); }
.muted { color: var(--muted); }
.reasons { margin: 0; padding-left: 18px; font-weight: 400; color: var(--ink); }
td.fallback { background: var(--unknown-bg); }
.fallback-mark { border: 1px solid var(--unknown); color: var(--unknown); border-radius: 4px; padding: 0 4px; font-size: 11px; }
.regressed { background: var(--broken); color: #fff; border-radius: 4px; padding: 0 4px; font-size: 11px; }
.facts td:first-child { white-space: nowrap; }
h3 { font-size: 14px; margin: 12px 0 4px; }
table.steps td:nth-child(-n+3), table.class td:first-child, table.class th { white-space: nowrap; }
.limits { color: var(--unknown); }
.live { float: right; font-size: 12px; padding: 2px 8px; border-radius: 10px; border: 1px solid var(--line); }
.live.ok { color: var(--ok); border-color: var(--ok); }
.live.down { color: var(--broken); border-color: var(--broken); }
.note { color: var(--muted); font-size: 12px; }
.cell-reason { color: var(--muted); font-weight: 400; font-size: 12px; }
.problem { color: var(--broken); }
@media print {
  body { padding: 0; font-size: 11px; }
  * { -webkit-print-color-adjust: exact; print-color-adjust: exact; }
  a { color: inherit; text-decoration: none; }
  .live, .no-print { display: none; }
  .layer, tr { page-break-inside: avoid; break-inside: avoid; }
  h2 { page-break-after: avoid; break-after: avoid; }
}
"""

# The picture of the six layers, top down as the path of a GPU Pod (seed 003): the Pod, the
# control plane, then the GPU node's kubelet, device plugin, container runtime + toolkit, driver.
PICTURE = r"""
{%- macro layer_box(l) -%}
<div class="layer status-{{ l.status }}{{ ' first-broken' if l.first else '' }}" data-layer="{{ l.layer }}"
     data-status="{{ l.status }}" data-first-broken="{{ 'true' if l.first else 'false' }}">
  <div class="head">
    <span class="title">{{ l.title }}</span>
    <code class="layer-id">{{ l.layer }}</code>
    <span class="badge">{{ l.status | upper }}</span>
    {%- if l.first %} <span class="first-mark">first broken layer</span>{% endif %}
  </div>
  <p class="role">{{ l.role }}</p>
  {%- if l.reason %}
  <p class="reason"><b>{{ 'Not judged' if l.status == 'skipped' else 'Why unknown' if l.status == 'unknown' else 'Reason' }}:</b> {{ l.reason }}</p>
  {%- endif %}
  <p class="next"><b>Next:</b> {{ l.next }}</p>
  {%- if l.evidence %}
  <ul class="evidence">
    {%- for e in l.evidence %}
    <li><code class="src">{% if e.href %}<a href="{{ e.href }}">{{ e.source }}</a>{% else %}{{ e.source }}{% endif %}</code>:
      <span class="val">{{ e.value }}</span></li>
    {%- endfor %}
  </ul>
  {%- endif %}
</div>
{%- endmacro -%}

{%- macro picture(d) -%}
<div class="verdict-line" data-first-broken="{{ d.first_broken or '' }}">
  {%- if d.first_broken %}The path of the GPU Pod is cut at <b>{{ d.first_broken }}</b> on node <b>{{ d.node }}</b>.
  {%- else %}No layer is broken on node <b>{{ d.node }}</b>{% if d.not_judged %} ({{ d.not_judged }} not judged){% endif %}.{% endif %}
</div>
<ol class="path" aria-label="the path of a GPU Pod, top down">
  {%- for l in d.outer %}
  <li>{{ layer_box(l) }}</li>
  <li class="arrow" aria-hidden="true">&#9660;</li>
  {%- endfor %}
  <li class="node-frame" data-node="{{ d.node }}">
    <div class="frame-title">GPU node {{ d.node }}</div>
    <ol class="path">
    {%- for l in d.inner %}
      <li>{{ layer_box(l) }}</li>
      {%- if not loop.last %}<li class="arrow" aria-hidden="true">&#9660;</li>{% endif %}
    {%- endfor %}
    </ol>
  </li>
</ol>
{%- if d.facts %}
<h2>Node facts behind it</h2>
<table class="facts">
  <tr><th>fact</th><th>value</th><th>read from</th></tr>
  {%- for f in d.facts %}
  <tr data-fact="{{ f.key }}"><td>{{ f.label }}</td><td class="mono">{{ f.value }}</td>
      <td><code>{% if f.href %}<a href="{{ f.href }}">{{ f.source }}</a>{% else %}{{ f.source }}{% endif %}</code></td></tr>
  {%- endfor %}
</table>
{%- endif %}
{%- endmacro -%}
"""

DIAGNOSIS_PAGE = r"""<!DOCTYPE html>
{%- from "picture.html" import picture %}
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>GPU diagnosis{{ ' of Pod ' ~ d.pod if d.pod else '' }} - {{ d.first_broken or 'no layer broken' }}</title>
<style>{{ style | safe }}</style>
</head>
<body>
<h1>GPU diagnosis{{ ' of Pod ' ~ d.pod if d.pod else ' of node ' ~ d.node }}</h1>
<p class="summary">Node judged: <b>{{ d.node }}</b>{% if d.candidates | length > 1 %} (of {{ d.candidates | join(', ') }}){% endif %}.
  Read from: <b>{{ d.source_label }}</b>{% if d.bundle %} <a href="{{ d.bundle_href }}"><code>{{ d.bundle }}</code></a>{% endif %}.
  First broken layer: <b>{{ d.first_broken or 'none' }}</b>.</p>
{%- if d.limits %}
<p class="limits">A {{ d.source }} cannot hold: {{ d.limits | join('; ') }}.</p>
{%- endif %}
{{ picture(d) }}
<p class="note">Layers are judged bottom-up (driver first) and drawn top down as the path of a GPU Pod
(seed 003): <code>ok</code>, <code>broken</code>, <code>unknown</code>, <code>skipped</code> (could not be
checked from here - never counted as ok). Written by gpu_diagnose.</p>
</body>
</html>
"""

BOARD_PAGE = r"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{ title }}</title>
<style>{{ style | safe }}</style>
</head>
<body>
<span id="live" class="live" data-state="starting">live</span>
<h1>{{ title }}</h1>
<p class="summary">Read-only: the lab's state folder <code>{{ state_dir }}</code>{% if cluster %}, cluster <b>{{ cluster }}</b>{% endif %}.
  Follows the lab every {{ poll_seconds }} s.</p>
<main id="board" data-version="{{ version }}" data-poll-ms="{{ (poll_seconds * 1000) | int }}">
{{ body }}
</main>
<script src="board.js"></script>
</body>
</html>
"""

BOARD_BODY = r"""
{%- from "picture.html" import picture -%}
{%- if classroom %}
<section id="classroom">
<h2>Classroom</h2>
{%- if classroom.problem %}<p class="problem">{{ classroom.problem }}</p>{% endif %}
{%- if classroom.graded_at %}<p class="muted">class-report.xml from {{ classroom.graded_at }} ({{ classroom.path }})</p>
{%- else %}<p class="muted">No class grade yet:
  <code>ansible-playbook playbooks/classroom-grade.yml -i INVENTORY</code> writes {{ classroom.path }}.</p>{% endif %}
<table class="class">
  <tr><th>Host</th><th>Lab</th>{% for s in classroom.columns %}<th>{{ s.label }}</th>{% endfor %}<th>Passed</th></tr>
  {%- for h in classroom.hosts %}
  <tr class="host-{{ h.status }}" data-host="{{ h.name }}" data-status="{{ h.status }}" data-lab="{{ h.lab }}">
    <td>{{ h.name }}</td>
    <td data-kwok-only="{{ 'true' if h.kwok_only else 'false' }}" data-fallback="{{ 'true' if h.fallback else 'false' }}"
        {%- if h.fallback %} class="fallback" title="lab_real_node asked for a real node; this host has no root, so it runs the kwok-only lab"{% endif %}>
      {{- h.lab }}{% if h.fallback %} <span class="fallback-mark">fallback</span>{% endif %}</td>
    {%- if h.status == 'graded' %}
      {%- for c in h.cells %}
      <td class="state-{{ c.state }}" data-step="{{ c.step }}" data-state="{{ c.state }}"{% if c.reason %} title="{{ c.reason }}"{% endif %}>
        {{ c.state if c.state != 'not-graded' else '-' }}{% if c.regressed %} <span class="regressed">was PASS</span>{% endif %}
        {%- if c.reason %}<div class="cell-reason">{{ c.reason | truncate(90) }}</div>{% endif %}</td>
      {%- endfor %}
      <td>{{ h.passed }}</td>
    {%- else %}
      <td colspan="{{ classroom.columns | length + 1 }}">{{ h.status_label }}{% if h.reason %}: {{ h.reason }}{% endif %}</td>
    {%- endif %}
  </tr>
  {%- endfor %}
</table>
</section>
{%- endif %}
<section id="nodes">
<h2>Nodes</h2>
{%- if nodes.problem %}<p class="problem" data-problem="nodes">{{ nodes.problem }}</p>{% endif %}
{%- if nodes.rows %}
<table>
  <tr><th>Node</th><th>Kind</th><th>Ready</th><th>{{ resource }} advertised</th><th>allocatable</th><th>Taints</th>
      <th>Node side ({{ nodes.facts_name }})</th><th>Sentinel (next start)</th></tr>
  {%- for n in nodes.rows %}
  <tr data-node="{{ n.name }}" data-ready="{{ n.ready }}" data-kind="{{ n.kind }}">
    <td>{{ n.name }}</td><td>{{ n.kind }}</td>
    <td class="{{ 'PASS' if n.ready == 'True' else 'FAIL' }}">{{ 'Ready' if n.ready == 'True' else 'NotReady' if n.ready == 'False' else 'Unknown' }}</td>
    <td>{{ n.capacity }}</td><td>{{ n.allocatable }}</td><td class="mono">{{ n.taints }}</td><td class="mono">{{ n.facts }}</td>
    <td data-sentinel="{{ n.sentinel | length }}">
    {%- for kind, c in n.sentinel | dictsort %}
      <div data-condition="{{ kind }}" data-status="{{ c.status }}"
           class="{{ 'FAIL' if c.status == 'True' else 'PASS' if c.status == 'False' else '' }}" title="{{ c.message }}">
        {{- kind }}={{ c.status }}
        {%- if c.status == 'True' %}<div class="cell-reason">{{ c.message | truncate(90) }}</div>{% endif %}</div>
    {%- else %}-{% endfor %}</td>
  </tr>
  {%- endfor %}
</table>
{%- if nodes.more %}<p class="muted" data-more-nodes="{{ nodes.more }}">The first {{ nodes.rows | length }} nodes by name;
  {% if nodes.more == 'more' %}more{% else %}{{ nodes.more }} more{% endif %} not shown (kubectl get nodes lists them all).</p>{% endif %}
{%- endif %}
</section>
{%- if dra.nodes or dra.problem %}
<section id="dra">
<h2>GPUs by ResourceClaim (DRA)</h2>
{%- if dra.problem %}<p class="problem" data-problem="dra">{{ dra.problem }}</p>{% endif %}
{%- if dra.note %}<p class="muted">{{ dra.note }}</p>{% endif %}
{%- for n in dra.nodes %}
<div class="dra-node" data-dra-node="{{ n.name }}" data-devices="{{ n.devices | length }}" data-claims="{{ n.claims | length }}">
<h3>{{ n.name }}</h3>
<p class="muted">DRA kubelet plugin: {{ n.plugin }}</p>
{%- if n.empty %}
<p class="problem" data-no-slices="{{ n.name }}">{{ n.empty }}</p>
{%- else %}
<table class="dra-devices">
  <tr><th>Device (ResourceSlice)</th><th>Type</th><th>Product / MIG profile</th><th>UUID</th><th>Memory</th><th>Driver</th><th>Claim</th></tr>
  {%- for d in n.devices %}
  <tr data-device="{{ d.name }}" data-type="{{ d.type }}" data-uuid="{{ d.uuid }}" data-claims="{{ d.claims | join(' ') }}">
    <td class="mono">{{ d.name }}</td><td>{{ d.type }}</td><td>{{ d.model }}</td>
    <td class="mono">{{ d.uuid }}{% if d.parent %}<div class="cell-reason">on {{ d.parent }}</div>{% endif %}</td>
    <td>{{ d.memory }}</td><td class="mono">{{ d.driver }}</td>
    <td class="mono">{{ d.claims | join(', ') if d.claims else '-' }}</td>
  </tr>
  {%- endfor %}
</table>
{%- endif %}
{%- if n.claims %}
<table class="dra-claims">
  <tr><th>ResourceClaim allocated on {{ n.name }}</th><th>Device(s)</th><th>Reserved for (Pods)</th></tr>
  {%- for c in n.claims %}
  <tr data-claim="{{ c.ref }}" data-devices="{{ c.devices | map(attribute='device') | join(' ') }}" data-pods="{{ c.pods | join(' ') }}">
    <td class="mono">{{ c.ref }}</td>
    <td class="mono">{% for d in c.devices %}<div>{{ d.device }}{% if d.uuid %} ({{ d.uuid }}){% endif %}
      {%- if not d.published %} <span class="regressed">not published now</span>{% endif %}</div>{% endfor %}</td>
    <td class="mono">{{ c.pods | join(', ') if c.pods else 'no Pod yet' }}</td>
  </tr>
  {%- endfor %}
</table>
{%- else %}
<p class="muted" data-claims-none="{{ n.name }}">No ResourceClaim is allocated on {{ n.name }}.</p>
{%- endif %}
</div>
{%- endfor %}
</section>
{%- endif %}
{%- if toolkit.rows or toolkit.problem %}
<section id="toolkit">
<h2>NVIDIA's toolkit installer</h2>
{%- if toolkit.problem %}<p class="problem" data-problem="toolkit">{{ toolkit.problem }}</p>{% endif %}
{%- if toolkit.rows %}
<p class="muted">The GPU Operator's toolkit DaemonSet Pods (<code>{{ toolkit.selector }}</code>): they write containerd's
  config and restart it by their restart mode.</p>
<table class="toolkit">
  <tr><th>Node</th><th>Pod</th><th>Phase</th><th>Ready</th><th>Restart mode</th><th>Version</th></tr>
  {%- for t in toolkit.rows %}
  <tr data-toolkit-node="{{ t.node }}" data-pod="{{ t.pod }}" data-phase="{{ t.phase }}" data-ready="{{ t.ready }}"
      data-mode="{{ t.mode }}" data-version="{{ t.version }}">
    <td>{{ t.node or 'not scheduled' }}</td><td class="mono">{{ t.pod }}</td>
    <td class="{{ 'PASS' if t.phase == 'Running' else 'FAIL' }}">{{ t.phase }}{% if t.restarts %} ({{ t.restarts }} restarts){% endif %}</td>
    <td class="{{ 'PASS' if t.ready == 'True' else 'FAIL' }}">{{ t.ready }}</td>
    <td title="{{ t.meaning }}"><span class="mono">{{ t.mode }}</span>{% if not t.mode_set %} (RUNTIME_RESTART_MODE unset: the installer's default){% endif %}
      {%- if t.meaning %}<div class="cell-reason">{{ t.meaning }}</div>{% endif %}</td>
    <td class="mono" title="{{ t.image }}">{{ t.version }}
      {%- if t.tag and t.tag != t.version %}<div class="cell-reason">image tag {{ t.tag }}</div>{% endif %}</td>
  </tr>
  {%- endfor %}
</table>
{%- endif %}
</section>
{%- endif %}
<section id="steps">
<h2>Steps</h2>
<p class="muted">{% if grade.graded_at %}Last grade run {{ grade.graded_at }} ({{ grade.path }})
  {%- if grade.lab_root %}, lab folder <code>{{ grade.lab_root }}</code>{% endif %}.
  {%- else %}No grade yet: <code>ansible-playbook playbooks/grade.yml</code> writes {{ grade.path }}.{% endif %}</p>
{%- if grade.problem %}<p class="problem">{{ grade.problem }}</p>{% endif %}
<table class="steps">
  <tr><th>Step</th><th>State</th><th>Graded</th><th>Reasons</th></tr>
  {%- for s in grade.rows %}
  <tr data-step="{{ s.key }}" data-state="{{ s.state }}">
    <td>{{ s.label }}</td>
    <td class="state-{{ s.state }}">{{ s.state if s.state != 'not-graded' else 'not graded' }}
      {%- if s.regressed %} <span class="regressed">was PASS</span>{% endif %}</td>
    <td class="muted">{{ s.when }}{% if s.earlier %} (an earlier run){% endif %}</td>
    <td>{% if s.reasons %}<ul class="reasons">{% for r in s.reasons %}<li>{{ r }}</li>{% endfor %}</ul>{% endif %}</td>
  </tr>
  {%- endfor %}
</table>
</section>
<section id="drill">
<h2>Active drill</h2>
{%- if drill.problem %}<p class="problem">{{ drill.problem }}</p>{% endif %}
{%- if drill.name %}
<p data-drill="{{ drill.name }}">Drill <b>{{ drill.name }}</b> is in place since {{ drill.since }}:
  Pod <code>{{ drill.pod }}</code>, node <code>{{ drill.node }}</code>. The trainee hands in
  <code>drills/{{ drill.name }}.txt</code>; <code>ansible-playbook playbooks/grade.yml -e drill={{ drill.name }}</code> grades it.</p>
{%- else %}
<p data-drill="">No drill in place{% if drill.since %} (healthy path since {{ drill.since }}){% endif %}.
  <code>ansible-playbook playbooks/drill.yml -e drill=list</code> lists them.</p>
{%- endif %}
</section>
<section id="diagnosis">
<h2>Diagnosis</h2>
{%- if diagnosis.problem %}<p class="problem">{{ diagnosis.problem }}</p>{% endif %}
{%- if diagnosis.d %}
<p class="muted">The latest diagnosis, {{ diagnosis.when }} ({{ diagnosis.path }}); <code>ansible-playbook playbooks/diagnose.yml</code> makes a new one.</p>
{{ picture(diagnosis.d) }}
{%- else %}
<p class="muted">No diagnosis yet: <code>ansible-playbook playbooks/diagnose.yml</code> writes {{ diagnosis.path }}.</p>
{%- endif %}
</section>
"""

BOARD_SCRIPT = r"""(function () {
  "use strict";
  var main = document.getElementById("board");
  var live = document.getElementById("live");
  var version = main.getAttribute("data-version");
  var pollMs = parseInt(main.getAttribute("data-poll-ms"), 10) || 2000;
  function show(state, text) {
    live.className = "live " + state;
    live.setAttribute("data-state", state);
    live.textContent = text;
  }
  function tick() {
    fetch("state", {cache: "no-store"}).then(function (response) {
      if (!response.ok) { throw new Error("HTTP " + response.status); }
      return response.json();
    }).then(function (state) {
      if (state.version !== version) {
        main.innerHTML = state.html;
        version = state.version;
        main.setAttribute("data-version", version);
      }
      show("ok", "live - read " + state.read_at);
    }).catch(function (error) {
      show("down", "the board does not answer (" + error.message + "); retrying");
    }).then(function () {
      window.setTimeout(tick, pollMs);
    });
  }
  window.setTimeout(tick, pollMs);
}());
"""

TEMPLATES = {
    "picture.html": PICTURE,
    "diagnosis.html": DIAGNOSIS_PAGE,
    "board.html": BOARD_PAGE,
    "board_body.html": BOARD_BODY,
}
