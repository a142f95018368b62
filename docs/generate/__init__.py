"""The documentation's generated pages: command lines and scenarios from their parsers and
parameter classes, the HTTP API from the store's OpenAPI schema, validation and benchmark pages from
the JSON results kept in ``docs/data`` (``python3 dev.py docs --record`` measures them again)."""
