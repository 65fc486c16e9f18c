# An OpenMMLab-style config: what the runner builds, by type name.
train_cfg = dict(by_epoch=True, max_epochs=2, val_interval=1)
optim_wrapper = dict(optimizer=dict(type="SGD", lr=0.5), clip_grad=dict(max_norm=10.0))
default_hooks = dict(  # scan-site
    checkpoint=None,
    logger=dict(type="LoggerHook", interval=100),
)
custom_hooks = []  # scan-site
randomness = dict(seed=0)
