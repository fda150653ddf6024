from toolcall_sim.cli.launch import main

raise SystemExit(main())
