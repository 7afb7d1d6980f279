# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The lab as pictures: the diagnosis as one HTML page, and the live board's page.

- templates.py  the Jinja2 templates, kept as Python data (the collection's module_utils ship
                only .py files; the build copies a package's *.py whole): the stylesheet, the
                picture of seed 003's six layers (a macro both pages use), the diagnosis page,
                the board page, its body and its script
- render.py     what the templates are given: the layers top down as the path of a GPU Pod,
                each with its verdict, evidence (bundle files linked relatively) and the node
                facts behind it; diagnosis_html() and board_html()

The board itself is no module code: what it reads, its read-only HTTP server on 127.0.0.1 and its
start / stop as a detached process are the lab_board role's files (roles/lab_board/files/:
board_server.py, board_control.py, the launcher lab_board.py); it renders with render.py.

Jinja2 is imported only where a page is rendered: an ansible-core dependency on a controller,
and a plain message elsewhere.
"""
