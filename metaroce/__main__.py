from metaroce.cli import main

raise SystemExit(main())
