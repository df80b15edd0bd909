pytest_plugins = ["hardware.plugin"]
