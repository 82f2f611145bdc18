"""Pure stream-json handling: lines in, transcript facts, setup problems and an outcome out."""
