"""What the offline rehearsal runs instead of AWS: moto's server, patched for this app (``moto_server``)."""
