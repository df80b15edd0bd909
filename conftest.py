# This checkout run without being installed: load the plugin as its pytest11 entry point would. The
# entry point is named after the module, so when it is installed this line is the same registration.
pytest_plugins = ["hardware.plugin"]
