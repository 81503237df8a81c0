"""Reports: render analysis results; they compute nothing themselves.

`build.build_report(store, registry)` gathers the numbers (all from `livemed.analysis` and
`livemed.judges`), `charts` lays them out as shapes, and `html.render_html(data)` renders one
self-contained HTML file with Jinja2 (autoescaping on: harvested text is always shown as text).
"""
