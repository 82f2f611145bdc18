"""``agentstudy view``: a study's local web page (issue 43 item 1).

``study_page`` renders the study page and its live state, ``pair_page`` one task × repetition's two arms
side by side, ``app`` the starlette application (127.0.0.1 only, a token on every request) and its server.
Every page is server-rendered HTML with inline CSS and one small inline script: no build step, nothing
fetched from elsewhere. starlette and uvicorn are imported only here, only when the command runs.
"""
