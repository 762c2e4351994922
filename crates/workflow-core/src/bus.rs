//! The `MessageBus` port: implemented by `wavecrew-msgbus` (file bus) and, later, networked buses.
