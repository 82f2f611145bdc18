"""State machines that alone decide which run and attempt transitions are legal."""
