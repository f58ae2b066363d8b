"""One module per ``pv`` command family, each attaching its commands to :data:`pv.app.app`."""
