from ocms_tui.cli import main

raise SystemExit(main())
