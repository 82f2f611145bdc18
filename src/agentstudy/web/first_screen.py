"""The report's first screen for the study page: each agent's glance section (verdict, fidelity, primary endpoint).

The same analysis and section the report builds (``report.agents.agent_analyses``,
``report.glance.glance_section``), rendered by the report's own HTML renderer (``report.render.html_section``).
"""

from __future__ import annotations

import html

from agentstudy.report.agents import agent_analyses
from agentstudy.report.glance import glance_section
from agentstudy.report.observed import ObservedStudy
from agentstudy.report.render import html_section


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


__all__ = ["first_screen_html"]
