from assets.cli import main

raise SystemExit(main())
