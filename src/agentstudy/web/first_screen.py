"""The report on the view's pages: each agent's glance section (the study page's first screen) and the whole
report with its task rows linked to their pair pages (``/report``; issue 43 item 3).

The same analysis and section the report builds (``report.agents.agent_analyses``,
``report.glance.glance_section``), rendered by the report's own HTML renderer (``report.render.html_section``).
"""

from __future__ import annotations

import html

from agentstudy.report.agents import agent_analyses
from agentstudy.report.build import VIEW_HINT, render_study
from agentstudy.report.glance import glance_section
from agentstudy.report.observed import ObservedStudy
from agentstudy.report.render import html_section
from agentstudy.web.study_page import ViewOptions, link


def first_screen_html(observed: ObservedStudy) -> str:
    """The glance section of every agent's analysis as HTML (an agent's name above its own when there are
    several); a line saying why when no analysis can be made yet (no attempt settled)."""
    if not observed.study.attempts:
        return "<p>The report's first screen appears once attempts have settled.</p>"
    try:
        analyses = agent_analyses(observed.study)
    except (ValueError, ArithmeticError) as error:
        return f"<p>The report's first screen cannot be drawn yet: {html.escape(str(error))}</p>"
    several = len(analyses) > 1
    return "".join((f"<h2>{html.escape(agent)}</h2>" if several else "") + html_section(glance_section(analysis))
                   for agent, analysis in analyses.items())




def linked_report(observed: ObservedStudy, options: ViewOptions) -> str:
    """The whole HTML report (``report.build.render_study``) with every task cell linked to that task's first
    pair page, and a footer saying so in place of the report's hint on how to open the pairs."""
    text = render_study(observed.study, None, "html")
    text = text.replace(VIEW_HINT, '<footer id="view-hint"><p>Served by agentstudy view: each task name links to '
                                   "its pair page.</p></footer>")
    firsts: dict[str, tuple[str, int]] = {}
    for item in observed.attempts:
        firsts.setdefault(item.attempt.task_id, (item.attempt.agent, item.attempt.repetition))
    for task, (agent, repetition) in firsts.items():
        target = html.escape(link("pair", options, agent=agent, task=task, repetition=repetition))
        text = text.replace(f"<td>{html.escape(task)}</td>", f'<td><a href="{target}">{html.escape(task)}</a></td>')
    return text


__all__ = ["first_screen_html", "linked_report"]
