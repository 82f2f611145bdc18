"""Study loops: preflight, schedule walking, stop rules and summaries; they drive the fsm."""
