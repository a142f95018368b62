"""Sources of surface tables (local, HTTP, memory, counting), ``open_surface`` and transports."""
