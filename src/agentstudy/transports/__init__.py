"""One attempt each: glue of io, stream and pricing for a given transport."""
